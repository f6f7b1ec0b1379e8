// Tools > Address testing, driven like a user (offscreen). The panel calls the address engine
// directly: no database is opened, no server runs (until the last test, which imports).
#include "address/AddressFamily.h"
#include "AddressEngine.h"
#include "AddressPanel.h"
#include "CoordTransform.h"
#include "Services.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSqlDatabase>
#include <QTableWidget>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTextCursor>
#include <QTextEdit>
#include <QThreadPool>

namespace {

template <typename T> T *child(QWidget *parent, const char *name)
{
    T *w = parent->findChild<T *>(QLatin1String(name));
    if (!w)
        qFatal("no widget %s", name);
    return w;
}

} // namespace

class TestAddressPanel : public QObject
{
    Q_OBJECT

private:
    // A family that never starts: its engine answers without imported data, and no database is
    // opened (the import row stays disabled).
    AddressFamily m_family;

    // Types text, picks endpoint (by data), clicks Run and waits for the answer.
    bool runOn(AddressPanel &panel, const QString &endpoint, const QString &text)
    {
        auto *combo = child<QComboBox>(&panel, "endpointCombo");
        const int index = combo->findData(endpoint);
        if (index < 0)
            return false;
        combo->setCurrentIndex(index);
        child<QPlainTextEdit>(&panel, "addressTextEdit")->setPlainText(text);
        QSignalSpy done(&panel, &AddressPanel::finished);
        QTest::mouseClick(child<QPushButton>(&panel, "runButton"), Qt::LeftButton);
        if (!panel.isRunning() && done.isEmpty())
            return false;
        return done.wait(15000) || !done.isEmpty();
    }

    static bool highlighted(QTextEdit *view, int pos)
    {
        QTextCursor c(view->document());
        c.setPosition(pos + 1); // the format of the character before the cursor
        return c.charFormat().hasProperty(QTextFormat::BackgroundBrush);
    }

private slots:
    void listsEveryEndpointAndAll()
    {
        AddressPanel panel(m_family);
        auto *combo = child<QComboBox>(&panel, "endpointCombo");
        const QStringList endpoints = AddressApi::endpoints();
        QCOMPARE(combo->count(), endpoints.size() + 1);
        for (const QString &e : endpoints)
            QVERIFY(combo->findData(e) >= 0);
        QVERIFY(combo->findData(QString()) >= 0); // All
    }

    void codePointOffsets()
    {
        const QString text = QStringLiteral("a\U0001F600b\U0001F600c");
        QCOMPARE(AddressPanel::codePointToPosition(text, 0), 0);
        QCOMPARE(AddressPanel::codePointToPosition(text, 1), 1);
        QCOMPARE(AddressPanel::codePointToPosition(text, 2), 3);
        QCOMPARE(AddressPanel::codePointToPosition(text, 3), 4);
        QCOMPARE(AddressPanel::codePointToPosition(text, 4), 6);
        QCOMPARE(AddressPanel::codePointToPosition(text, 5), 7);
        QCOMPARE(AddressPanel::codePointToPosition(text, 99), 7);
    }

    void extractPhoneHighlightsTheNumber()
    {
        AddressPanel panel(m_family);
        panel.show();
        // U+1F600 takes two QChars: code point offsets and QString positions differ by one.
        const QString number = QStringLiteral("13812345678");
        const QString text = QStringLiteral("\U0001F600联系") + number + QStringLiteral("，谢谢");
        QVERIFY(runOn(panel, QStringLiteral("extract-phone"), text));
        QVERIFY2(panel.lastCalls().first().reply.ok(),
                 qPrintable(panel.lastCalls().first().reply.error));

        const int from = text.indexOf(number);
        const int to = from + number.size();
        QCOMPARE(panel.highlightedRanges().size(), 1);
        QCOMPARE(panel.highlightedRanges().first(), qMakePair(from, to));

        auto *view = child<QTextEdit>(&panel, "highlightView");
        QCOMPARE(view->toPlainText(), text);
        QVERIFY(view->isReadOnly());
        for (int pos = 0; pos < text.size(); ++pos)
            QCOMPARE(highlighted(view, pos), pos >= from && pos < to);

        auto *json = child<QPlainTextEdit>(&panel, "jsonView");
        QVERIFY(json->isReadOnly());
        const QJsonObject body = QJsonDocument::fromJson(json->toPlainText().toUtf8()).object();
        QCOMPARE(body.value("phone_extract").toArray().first().toObject().value("word").toString(),
                 number);
        QVERIFY(!child<QLabel>(&panel, "addressErrorLabel")->isVisibleTo(&panel));
        QCOMPARE(child<QLabel>(&panel, "runStatusLabel")->property("state").toString(),
                 QStringLiteral("done"));
    }

    void divisionCodeFillsTheTable()
    {
        AddressPanel panel(m_family);
        QVERIFY(runOn(panel, QStringLiteral("division-code"),
                      QStringLiteral("浙江省杭州市余杭区文一西路969号")));
        auto *table = child<QTableWidget>(&panel, "divisionTable");
        auto cell = [table](int row) {
            return table->item(row, 0) ? table->item(row, 0)->text() : QString();
        };
        QCOMPARE(cell(AddressPanel::ProvinceRow), QStringLiteral("浙江省"));
        QCOMPARE(cell(AddressPanel::CityRow), QStringLiteral("杭州市"));
        QCOMPARE(cell(AddressPanel::DistrictRow), QStringLiteral("余杭区"));
        QVERIFY(cell(AddressPanel::DivcodeRow).startsWith(QStringLiteral("330110")));
        QCOMPARE(cell(AddressPanel::DivcodeRow).size(), 12);
    }

    void transferCoordShowsFourRowsAndCopies()
    {
        AddressPanel panel(m_family);
        auto *src = child<QComboBox>(&panel, "srcCoordCombo");
        src->setCurrentIndex(src->findData(QStringLiteral("gcj02")));
        const QString input = QStringLiteral("120.019726,30.279893");
        QVERIFY(runOn(panel, QStringLiteral("transfer-coord"), input));
        QVERIFY(panel.lastCalls().first().reply.ok());

        auto *table = child<QTableWidget>(&panel, "coordTable");
        QCOMPARE(table->rowCount(), 4);
        QStringList systems;
        for (int row = 0; row < 4; ++row)
            systems << table->item(row, 0)->text();
        QCOMPARE(systems, (QStringList{"WGS84", "GCJ02", "BD09", "CGCS2000"}));
        QCOMPARE(table->item(1, 1)->text(), input); // GCJ02 is the input itself

        // The rows agree with the endpoint's own answer.
        const QJsonObject answer =
            panel.lastCalls().first().reply.body.value("coord_transfer").toObject();
        for (int row = 0; row < 4; ++row)
            QCOMPARE(table->item(row, 1)->text(), answer.value(systems.at(row)).toString());

        QGuiApplication::clipboard()->clear();
        QTest::mouseClick(child<QPushButton>(&panel, "copyCoord_BD09"), Qt::LeftButton);
        QCOMPARE(QGuiApplication::clipboard()->text(), table->item(2, 1)->text());
        QTest::mouseClick(child<QPushButton>(&panel, "copyCoord_WGS84"), Qt::LeftButton);
        QCOMPARE(QGuiApplication::clipboard()->text(), table->item(0, 1)->text());
    }

    void geocodeShowsItsPointInAllSystems()
    {
        AddressPanel panel(m_family);
        QVERIFY(runOn(panel, QStringLiteral("geocode"), QStringLiteral("杭州市余杭区")));
        QVERIFY(panel.lastCalls().first().reply.ok());
        auto *table = child<QTableWidget>(&panel, "coordTable");
        QCOMPARE(table->rowCount(), 4);
        const QJsonObject geo =
            panel.lastCalls().first().reply.body.value("offline_geocode").toObject();
        QCOMPARE(table->item(1, 1)->text(), geo.value("gcj02").toString());
        QCOMPARE(table->item(0, 1)->text(), geo.value("wgs84").toString());
    }

    void emptyTextShowsTheError()
    {
        AddressPanel panel(m_family);
        QVERIFY(runOn(panel, QStringLiteral("extract-phone"), QString()));
        auto *error = child<QLabel>(&panel, "addressErrorLabel");
        QVERIFY(error->isVisibleTo(&panel));
        QVERIFY2(error->text().contains(QStringLiteral("text: must not be empty")),
                 qPrintable(error->text()));
        QVERIFY(child<QPlainTextEdit>(&panel, "jsonView")->toPlainText().contains("400"));
        QCOMPARE(child<QTableWidget>(&panel, "coordTable")->rowCount(), 0);
    }

    void allRunsTheTextEndpoints()
    {
        AddressPanel panel(m_family);
        QVERIFY(runOn(panel, QString(), QStringLiteral("浙江省杭州市余杭区，电话13812345678")));
        QStringList ran;
        for (const AddressPanel::Call &c : panel.lastCalls())
            ran << c.endpoint;
        QVERIFY(!ran.contains(QStringLiteral("transfer-coord"))); // not a coordinate
        QVERIFY(ran.contains(QStringLiteral("extract-phone")));
        QVERIFY(ran.contains(QStringLiteral("division-code")));
        QCOMPARE(ran.size(), AddressApi::endpoints().size() - 1);
        // Spans of every endpoint are marked; the phone's (characters 12-23) among them.
        const int phoneStart = AddressPanel::codePointToPosition(
            QStringLiteral("浙江省杭州市余杭区，电话13812345678"), 12);
        QVERIFY(panel.highlightedRanges().contains(qMakePair(phoneStart, phoneStart + 11)));
        QCOMPARE(child<QTableWidget>(&panel, "divisionTable")->item(0, 0)->text(),
                 QStringLiteral("浙江省"));

        // A coordinate brings transfer-coord in.
        QVERIFY(runOn(panel, QString(), QStringLiteral("120.0,30.0")));
        ran.clear();
        for (const AddressPanel::Call &c : panel.lastCalls())
            ran << c.endpoint;
        QVERIFY(ran.contains(QStringLiteral("transfer-coord")));
        QCOMPARE(child<QTableWidget>(&panel, "coordTable")->rowCount(), 4);
    }

    void structureTable()
    {
        AddressPanel panel(m_family);
        QVERIFY(runOn(panel, QStringLiteral("structure"),
                      QStringLiteral("浙江省杭州市余杭区文一西路969号")));
        auto *table = child<QTableWidget>(&panel, "structureTable");
        QHash<QString, QString> rows;
        for (int r = 0; r < table->rowCount(); ++r)
            rows.insert(table->item(r, 0)->text(), table->item(r, 1)->text());
        QCOMPARE(rows.value("prov"), QStringLiteral("浙江省"));
        QCOMPARE(rows.value("district"), QStringLiteral("余杭区"));
        QCOMPARE(rows.value("road"), QStringLiteral("文一西路"));
        QCOMPARE(rows.value("roadNo"), QStringLiteral("969号"));
        QCOMPARE(child<QTabWidget>(&panel, "resultTabs")->currentWidget(), table);

        // complete fills the same table, with the levels the text left out.
        QVERIFY(runOn(panel, QStringLiteral("complete"), QStringLiteral("余杭区文一西路969号")));
        QCOMPARE(table->item(0, 0)->text(), QStringLiteral("prov"));
        QCOMPARE(table->item(0, 1)->text(), QStringLiteral("浙江省"));
    }

    void assessmentFindings()
    {
        AddressPanel panel(m_family);
        QVERIFY(runOn(panel, QStringLiteral("assessment"),
                      QStringLiteral("浙江省杭州市海淀区 电话1381234567")));
        auto *findings = child<QTableWidget>(&panel, "findingsTable");
        QStringList codes;
        for (int r = 0; r < findings->rowCount(); ++r) {
            codes << findings->item(r, 0)->text();
            QVERIFY(!findings->item(r, 1)->text().isEmpty()); // a readable message
        }
        QVERIFY2(codes.contains(QStringLiteral("PHONE_DIGITS")), qPrintable(codes.join(',')));
        QVERIFY(child<QLabel>(&panel, "assessmentCodeLabel")->text().contains(u"Code:"));

        QVERIFY(runOn(panel, QStringLiteral("assessment"), QStringLiteral("明天下午三点开会")));
        QCOMPARE(findings->item(0, 0)->text(), QStringLiteral("NOT_ADDRESS"));
    }

    void neverTouchesTheDatabase()
    {
        // Every test above built the panel without a database; none was opened.
        QVERIFY(QSqlDatabase::connectionNames().isEmpty());
    }

    void deletedWhileRunningIsSafe()
    {
        auto *panel = new AddressPanel(m_family);
        child<QPlainTextEdit>(panel, "addressTextEdit")->setPlainText(QStringLiteral("杭州"));
        auto *combo = child<QComboBox>(panel, "endpointCombo");
        combo->setCurrentIndex(combo->findData(QStringLiteral("division-code")));
        panel->run();
        QVERIFY(panel->isRunning());
        QCOMPARE(child<QLabel>(panel, "runStatusLabel")->text(), QStringLiteral("Running…"));
        delete panel;
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents(); // the queued answer finds no panel
    }

    // Last: it opens a database. The Address data row imports a CSV into the database of the
    // services' address family, whose engine (the one the server answers from) has the data at
    // once; rejected rows are listed.
    void importFromTheWindow()
    {
        QTemporaryDir dir;
        Services services(ServerSettings::defaults(),
                          DatabaseConfig::sqlite(dir.filePath(QStringLiteral("switchyard.db"))));
        AddressFamily *family = services.family<AddressFamily>();
        QVERIFY(family);
        {
            AddressPanel panel(*family);
            QVERIFY(!child<QPushButton>(&panel, "importButton")->isEnabled()); // not started
        }
        services.start();
        QVERIFY(family->waitForLoad(30000));
        AddressPanel panel(*family);
        QCOMPARE(panel.engine(), family->engine());
        auto *button = child<QPushButton>(&panel, "importButton");
        QVERIFY(button->isEnabled());

        const QString zip = QStringLiteral("浙江省杭州市余杭区五常街道文一西路969号");
        QCOMPARE(AddressApi::call(*family->engine(), QStringLiteral("zipcode"), {{"text", zip}})
                     .body.value("status")
                     .toString(),
                 QStringLiteral("NO_DATA"));

        QSignalSpy done(&panel, &AddressPanel::importFinished);
        panel.importFile(AddressStore::Kind::Zipcodes,
                         QStringLiteral(FIXTURE_DIR "/zipcodes-fixture.csv"), false);
        QVERIFY(panel.isImporting());
        QVERIFY(done.wait(30000));
        QVERIFY(panel.lastImport().ok());
        QVERIFY(panel.lastImport().imported > 0);
        QVERIFY(!panel.lastImport().errors.isEmpty()); // the fixture has bad rows
        const QString summary = child<QLabel>(&panel, "importSummaryLabel")->text();
        QVERIFY2(summary.contains(QStringLiteral("line ")), qPrintable(summary));
        QVERIFY(child<QLabel>(&panel, "dataStatusLabel")->text().contains(u"zip code rows"));

        const AddressApi::Reply r =
            AddressApi::call(*family->engine(), QStringLiteral("zipcode"), {{"text", zip}});
        QCOMPARE(r.body.value("status").toString(), QStringLiteral("OK"));
        QCOMPARE(r.body.value("zipcode").toString(), QStringLiteral("311122"));

        // Data installed behind the panel's back (the start-up load, another process's import)
        // shows within a second.
        family->engine()->install(nullptr);
        QTRY_VERIFY_WITH_TIMEOUT(
            child<QLabel>(&panel, "dataStatusLabel")->text().startsWith(u"no zip codes"), 5000);

        // A file that cannot be read is reported, not a crash.
        panel.importFile(AddressStore::Kind::Pois, QStringLiteral("/nonexistent/pois.csv"), false);
        QVERIFY(done.wait(30000));
        QVERIFY(!panel.lastImport().ok());
        QVERIFY(child<QLabel>(&panel, "importSummaryLabel")->text().startsWith(u"Import failed"));
    }
};

QTEST_MAIN(TestAddressPanel)
#include "tst_address_panel.moc"
