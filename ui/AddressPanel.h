#pragma once

#include "address/AddressStore.h"
#include "AddressApi.h"

#include <memory>
#include <QJsonObject>
#include <QList>
#include <QPair>
#include <QString>
#include <QWidget>

class AddressEngine;
class AddressFamily;
class QCheckBox;
class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTableWidget;
class QTabWidget;
class QTextEdit;

// Tools > Address testing: type or paste text, pick an address endpoint (every one of
// AddressApi::endpoints(), or "All"), Run. The call goes straight to AddressApi::call with the
// engine the server uses (the address family's), on a pool thread: nothing is billed or
// recorded and no database is touched. Shows the JSON answer, extracted spans (any array of objects
// with start/end, in Unicode code points) highlighted in a copy of the text, the division path as a
// table, the point a result gives in all four coordinate systems with a Copy button per row, the
// structure as a table of keys, assessment findings, and errors inline in red.
//
// Widgets are named for tests: "addressTextEdit", "endpointCombo" (item data: the endpoint, empty
// for All), "srcCoordCombo", "dstCoordCombo" (item data: the system name, empty for all four),
// "runButton", "runStatusLabel" (property "state": "idle", "running", "done"),
// "addressErrorLabel", "jsonView", "highlightView", "divisionTable", "coordTable",
// "coordSourceLabel", per coordinate row "copyCoord_<KEY>" (KEY as in WGS84, GCJ02, ...),
// "structureTable" (key, value rows of structure/complete/standardize), "assessmentCodeLabel" and
// "findingsTable" (assessment findings: code, message), all in the tabs "resultTabs"; the data
// row "importKindCombo" (item data: zipcodes, pois), "importReplaceCheck", "importButton",
// "dataStatusLabel" (rows the engine answers from), "importSummaryLabel" (the last import, its
// first rejected rows).
class AddressPanel : public QWidget
{
    Q_OBJECT
public:
    struct Call
    {
        QString endpoint;
        QJsonObject request;
        AddressApi::Reply reply;
    };

    enum DivisionRow
    {
        ProvinceRow,
        CityRow,
        DistrictRow,
        StreetRow,
        DivcodeRow,
        DivisionRowCount
    };

    // family: the services' address family, whose engine the panel calls and into whose
    // database (and engine) "Import CSV…" imports; it must outlive the panel, and the import row
    // is enabled only when it has started (it has a database then).
    explicit AddressPanel(AddressFamily &family, QWidget *parent = nullptr);

    // The engine the panel calls.
    const std::shared_ptr<AddressEngine> &engine() const { return m_engine; }
    bool isImporting() const { return m_importing; }
    const AddressStore::ImportReport &lastImport() const { return m_lastImport; }

    bool isRunning() const { return m_running; }
    // Spans highlighted in the highlight view, as QString (UTF-16) [start, end) positions.
    const QList<QPair<int, int>> &highlightedRanges() const { return m_ranges; }
    // The calls of the last finished run, in order.
    const QList<Call> &lastCalls() const { return m_calls; }

    // Code point offset -> QString position in text (offsets past the end clamp to the end).
    static int codePointToPosition(const QString &text, qint64 codePoint);

public slots:
    void run();
    // Imports a CSV file through the family (AddressFamily::importCsv: a thread of its own);
    // importFinished() when done. Does nothing while an import runs.
    void importFile(AddressStore::Kind kind, const QString &path, bool replace);

private slots:
    void chooseImportFile();

signals:
    void finished();
    void importFinished();

private:
    void updateCoordOptions();
    void showResults(int generation, const QString &text, const QList<Call> &calls);
    void showHighlights(const QString &text, const QList<Call> &calls);
    void showDivision(const QList<Call> &calls);
    void showCoordinates(const QList<Call> &calls);
    void showStructure(const QList<Call> &calls);
    void showAssessment(const QList<Call> &calls);
    void setState(const QString &state, const QString &text);
    void showDataStatus();
    void showImportReport(const AddressStore::ImportReport &report);

    QPlainTextEdit *m_text;
    QComboBox *m_endpoint;
    QLabel *m_srcLabel;
    QComboBox *m_src;
    QLabel *m_dstLabel;
    QComboBox *m_dst;
    QPushButton *m_run;
    QLabel *m_status;
    QLabel *m_error;
    QPlainTextEdit *m_json;
    QTextEdit *m_highlight;
    QTableWidget *m_division;
    QLabel *m_coordSource;
    QTableWidget *m_coords;
    QTableWidget *m_structure;
    QLabel *m_assessmentCode;
    QTableWidget *m_findings;
    QTabWidget *m_views;
    QComboBox *m_importKind;
    QCheckBox *m_importReplace;
    QPushButton *m_importButton;
    QLabel *m_dataStatus;
    QLabel *m_importSummary;
    AddressFamily *m_family;
    std::shared_ptr<AddressEngine> m_engine;
    bool m_importing = false;
    quint64 m_shownGeneration = 0; // the engine's generation() the data label shows
    AddressStore::ImportReport m_lastImport;

    bool m_running = false;
    int m_generation = 0;
    QList<QPair<int, int>> m_ranges;
    QList<Call> m_calls;
};
