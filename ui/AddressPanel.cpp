#include "AddressPanel.h"

#include "address/AddressFamily.h"
#include "AddressEngine.h"
#include "CoordTransform.h"
#include "LocalData.h"

#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QMetaObject>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QTabWidget>
#include <QTextCursor>
#include <QTextEdit>
#include <QThreadPool>
#include <QTimer>
#include <QVBoxLayout>

#include <optional>

namespace {

using CoordTransform::System;

const QList<System> kSystems = {System::Wgs84, System::Gcj02, System::Bd09, System::Cgcs2000};

QJsonObject replyJson(const AddressApi::Reply &reply)
{
    if (reply.ok())
        return reply.body;
    QJsonObject error{{"status", reply.status}, {"error", reply.error}};
    if (!reply.param.isEmpty())
        error.insert("param", reply.param);
    return error;
}

// Every array of objects with numeric start and end, anywhere in the answer.
void collectSpans(const QJsonValue &value, QList<QPair<qint64, qint64>> *spans)
{
    if (value.isArray()) {
        for (const QJsonValue &item : value.toArray()) {
            const QJsonObject o = item.toObject();
            if (item.isObject() && o.value("start").isDouble() && o.value("end").isDouble())
                spans->append({o.value("start").toInteger(), o.value("end").toInteger()});
            collectSpans(item, spans);
        }
    } else if (value.isObject()) {
        const QJsonObject o = value.toObject();
        for (auto it = o.begin(); it != o.end(); ++it)
            collectSpans(it.value(), spans);
    }
}

// The first object named key, anywhere in the answer.
std::optional<QJsonObject> findObject(const QJsonValue &value, const QString &key)
{
    if (value.isObject()) {
        const QJsonObject o = value.toObject();
        if (o.value(key).isObject())
            return o.value(key).toObject();
        for (auto it = o.begin(); it != o.end(); ++it)
            if (auto found = findObject(it.value(), key))
                return found;
    } else if (value.isArray()) {
        for (const QJsonValue &item : value.toArray())
            if (auto found = findObject(item, key))
                return found;
    }
    return std::nullopt;
}

struct Point
{
    CoordTransform::LonLat point;
    System system;
    QString source;
};

// The point a result gives: transfer-coord's input (with its srcCoord) or geocode's gcj02.
std::optional<Point> pointOf(const AddressPanel::Call &call)
{
    if (!call.reply.ok())
        return std::nullopt;
    if (call.reply.body.value("coord_transfer").isObject()) {
        const auto parsed = CoordTransform::parseCoordinate(call.request.value("text").toString());
        const auto src = CoordTransform::parseSystem(call.request.value("srcCoord").toString());
        if (parsed.ok && src)
            return Point{parsed.value, *src,
                         AddressPanel::tr("%1: the input point (%2)")
                             .arg(call.endpoint, CoordTransform::systemKey(*src))};
    }
    auto geo = findObject(call.reply.body, QStringLiteral("offline_geocode"));
    if (!geo)
        geo = findObject(call.reply.body, QStringLiteral("hp_geocode"));
    if (geo) {
        const auto parsed = CoordTransform::parseCoordinate(geo->value("gcj02").toString());
        if (parsed.ok)
            return Point{parsed.value, System::Gcj02,
                         AddressPanel::tr("%1: the %2 point (GCJ02)")
                             .arg(call.endpoint, geo->value("level").toString())};
    }
    return std::nullopt;
}

// The first tab-separated key=value string an answer gives (structure, complete, or the
// structure standardize returns), as pairs in order.
QList<QPair<QString, QString>> keyValuePairs(const QJsonObject &body)
{
    for (const char *field : {"structure", "complete"}) {
        const QString text = body.value(QLatin1String(field)).toString();
        if (!text.contains(u'='))
            continue;
        QList<QPair<QString, QString>> pairs;
        for (const QString &part : text.split(u'\t', Qt::SkipEmptyParts)) {
            const qsizetype eq = part.indexOf(u'=');
            if (eq > 0)
                pairs.append({part.left(eq), part.mid(eq + 1)});
        }
        return pairs;
    }
    return {};
}

QTableWidgetItem *readOnlyItem(const QString &text)
{
    auto *item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    return item;
}

} // namespace

AddressPanel::AddressPanel(AddressFamily &family, QWidget *parent)
    : QWidget(parent), m_family(&family), m_engine(family.engine())
{
    setObjectName(QStringLiteral("addressPanel"));

    m_text = new QPlainTextEdit(this);
    m_text->setObjectName(QStringLiteral("addressTextEdit"));
    m_text->setPlaceholderText(
        tr("Text to send, e.g. an address, a phone number, or \"lon,lat\" for transfer-coord"));
    m_text->setMaximumHeight(110);

    m_endpoint = new QComboBox(this);
    m_endpoint->setObjectName(QStringLiteral("endpointCombo"));
    for (const QString &endpoint : AddressApi::endpoints())
        m_endpoint->addItem(endpoint, endpoint);
    m_endpoint->addItem(tr("All"), QString());

    m_src = new QComboBox(this);
    m_src->setObjectName(QStringLiteral("srcCoordCombo"));
    m_dst = new QComboBox(this);
    m_dst->setObjectName(QStringLiteral("dstCoordCombo"));
    m_dst->addItem(tr("All four"), QString());
    for (System s : kSystems) {
        m_src->addItem(CoordTransform::systemKey(s), CoordTransform::systemName(s));
        m_dst->addItem(CoordTransform::systemKey(s), CoordTransform::systemName(s));
    }
    m_srcLabel = new QLabel(tr("srcCoord:"), this);
    m_dstLabel = new QLabel(tr("dstCoord:"), this);

    m_run = new QPushButton(tr("Run"), this);
    m_run->setObjectName(QStringLiteral("runButton"));
    m_run->setDefault(true);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("runStatusLabel"));
    setState(QStringLiteral("idle"), QString());

    auto *controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Endpoint:"), this));
    controls->addWidget(m_endpoint);
    controls->addWidget(m_srcLabel);
    controls->addWidget(m_src);
    controls->addWidget(m_dstLabel);
    controls->addWidget(m_dst);
    controls->addWidget(m_run);
    controls->addWidget(m_status, 1);

    m_error = new QLabel(this);
    m_error->setObjectName(QStringLiteral("addressErrorLabel"));
    m_error->setStyleSheet(QStringLiteral("color: #c0392b;"));
    m_error->setWordWrap(true);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error->hide();

    m_json = new QPlainTextEdit(this);
    m_json->setObjectName(QStringLiteral("jsonView"));
    m_json->setReadOnly(true);
    m_json->setFont(QFont(QStringLiteral("monospace")));

    m_highlight = new QTextEdit(this);
    m_highlight->setObjectName(QStringLiteral("highlightView"));
    m_highlight->setReadOnly(true);
    m_highlight->setAcceptRichText(false);

    m_division = new QTableWidget(DivisionRowCount, 1, this);
    m_division->setObjectName(QStringLiteral("divisionTable"));
    m_division->setVerticalHeaderLabels(
        {tr("Province"), tr("City"), tr("District"), tr("Street"), tr("Divcode")});
    m_division->setHorizontalHeaderLabels({tr("Name")});
    m_division->horizontalHeader()->setStretchLastSection(true);
    m_division->setEditTriggers(QAbstractItemView::NoEditTriggers);

    m_coordSource = new QLabel(this);
    m_coordSource->setObjectName(QStringLiteral("coordSourceLabel"));
    m_coords = new QTableWidget(0, 3, this);
    m_coords->setObjectName(QStringLiteral("coordTable"));
    m_coords->setHorizontalHeaderLabels({tr("System"), tr("lon,lat"), QString()});
    m_coords->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    m_coords->verticalHeader()->hide();
    m_coords->setEditTriggers(QAbstractItemView::NoEditTriggers);

    m_structure = new QTableWidget(0, 2, this);
    m_structure->setObjectName(QStringLiteral("structureTable"));
    m_structure->setHorizontalHeaderLabels({tr("Key"), tr("Value")});
    m_structure->horizontalHeader()->setStretchLastSection(true);
    m_structure->verticalHeader()->hide();
    m_structure->setEditTriggers(QAbstractItemView::NoEditTriggers);

    m_assessmentCode = new QLabel(this);
    m_assessmentCode->setObjectName(QStringLiteral("assessmentCodeLabel"));
    m_findings = new QTableWidget(0, 2, this);
    m_findings->setObjectName(QStringLiteral("findingsTable"));
    m_findings->setHorizontalHeaderLabels({tr("Finding"), tr("Message")});
    m_findings->horizontalHeader()->setStretchLastSection(true);
    m_findings->verticalHeader()->hide();
    m_findings->setEditTriggers(QAbstractItemView::NoEditTriggers);

    auto *jsonBox = new QGroupBox(tr("Answer (JSON)"), this);
    auto *jsonLayout = new QVBoxLayout(jsonBox);
    jsonLayout->addWidget(m_json);

    auto *visual = new QWidget(this);
    auto *visualLayout = new QVBoxLayout(visual);
    visualLayout->setContentsMargins(0, 0, 0, 0);
    auto *spansBox = new QGroupBox(tr("Extracted spans"), visual);
    (new QVBoxLayout(spansBox))->addWidget(m_highlight);
    auto *coordPage = new QWidget(visual);
    auto *coordLayout = new QVBoxLayout(coordPage);
    coordLayout->addWidget(m_coordSource);
    coordLayout->addWidget(m_coords);
    auto *assessmentPage = new QWidget(visual);
    auto *assessmentLayout = new QVBoxLayout(assessmentPage);
    assessmentLayout->addWidget(m_assessmentCode);
    assessmentLayout->addWidget(m_findings);
    m_views = new QTabWidget(visual);
    m_views->setObjectName(QStringLiteral("resultTabs"));
    m_views->addTab(m_division, tr("Division"));
    m_views->addTab(m_structure, tr("Structure"));
    m_views->addTab(coordPage, tr("Coordinates"));
    m_views->addTab(assessmentPage, tr("Assessment"));
    visualLayout->addWidget(spansBox);
    visualLayout->addWidget(m_views, 1);

    auto *split = new QSplitter(this);
    split->addWidget(jsonBox);
    split->addWidget(visual);

    // Imported data: the rows the engine answers zipcode and POI geocoding from.
    m_importKind = new QComboBox(this);
    m_importKind->setObjectName(QStringLiteral("importKindCombo"));
    m_importKind->addItem(tr("Zip codes"), QStringLiteral("zipcodes"));
    m_importKind->addItem(tr("Points of interest"), QStringLiteral("pois"));
    m_importReplace = new QCheckBox(tr("Replace existing"), this);
    m_importReplace->setObjectName(QStringLiteral("importReplaceCheck"));
    m_importButton = new QPushButton(tr("Import CSV…"), this);
    m_importButton->setObjectName(QStringLiteral("importButton"));
    m_dataStatus = new QLabel(this);
    m_dataStatus->setObjectName(QStringLiteral("dataStatusLabel"));
    m_importSummary = new QLabel(this);
    m_importSummary->setObjectName(QStringLiteral("importSummaryLabel"));
    m_importSummary->setWordWrap(true);
    m_importSummary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto *dataRow = new QHBoxLayout;
    dataRow->addWidget(new QLabel(tr("Address data:"), this));
    dataRow->addWidget(m_dataStatus, 1);
    dataRow->addWidget(m_importKind);
    dataRow->addWidget(m_importReplace);
    dataRow->addWidget(m_importButton);
    // Importing needs the family's database.
    const bool canImport = m_family->canImport();
    for (QWidget *w :
         {static_cast<QWidget *>(m_importKind), static_cast<QWidget *>(m_importReplace),
          static_cast<QWidget *>(m_importButton)})
        w->setEnabled(canImport);
    m_importButton->setToolTip(tr("CSV formats: see the README (Address services)."));
    connect(m_importButton, &QPushButton::clicked, this, &AddressPanel::chooseImportFile);
    showDataStatus();
    // The data also changes without this panel: the load at start, another process's import.
    auto *poll = new QTimer(this);
    connect(poll, &QTimer::timeout, this, [this] {
        if (m_engine->generation() != m_shownGeneration)
            showDataStatus();
    });
    poll->start(1000);

    auto *layout = new QVBoxLayout(this);
    auto *intro = new QLabel(tr("Calls the address engine directly, as the server does. Nothing "
                                "is billed or recorded."),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    layout->addWidget(m_text);
    layout->addLayout(controls);
    layout->addWidget(m_error);
    layout->addWidget(split, 1);
    layout->addLayout(dataRow);
    layout->addWidget(m_importSummary);

    connect(m_run, &QPushButton::clicked, this, &AddressPanel::run);
    connect(m_endpoint, &QComboBox::currentIndexChanged, this, &AddressPanel::updateCoordOptions);
    updateCoordOptions();
}

int AddressPanel::codePointToPosition(const QString &text, qint64 codePoint)
{
    int pos = 0;
    for (qint64 cp = 0; cp < codePoint && pos < text.size(); ++cp) {
        if (text.at(pos).isHighSurrogate() && pos + 1 < text.size() &&
            text.at(pos + 1).isLowSurrogate())
            pos += 2;
        else
            pos += 1;
    }
    return pos;
}

void AddressPanel::updateCoordOptions()
{
    // srcCoord matters to transfer-coord, and to All when the text is a coordinate.
    const QString endpoint = m_endpoint->currentData().toString();
    const bool coord = endpoint == u"transfer-coord" || endpoint.isEmpty();
    m_srcLabel->setVisible(coord);
    m_src->setVisible(coord);
    m_dstLabel->setVisible(endpoint == u"transfer-coord");
    m_dst->setVisible(endpoint == u"transfer-coord");
}

void AddressPanel::setState(const QString &state, const QString &text)
{
    m_status->setProperty("state", state);
    m_status->setText(text);
}

void AddressPanel::run()
{
    if (m_running)
        return;
    const QString text = m_text->toPlainText();
    const QString chosen = m_endpoint->currentData().toString();
    const bool all = chosen.isEmpty();
    const bool isCoordinate = CoordTransform::parseCoordinate(text).ok;

    QList<Call> calls;
    for (const QString &endpoint : AddressApi::endpoints()) {
        if (!all && endpoint != chosen)
            continue;
        Call c;
        c.endpoint = endpoint;
        c.request.insert("text", text);
        if (endpoint == u"transfer-coord") {
            if (all && !isCoordinate)
                continue;
            c.request.insert("srcCoord", m_src->currentData().toString());
            if (!all && !m_dst->currentData().toString().isEmpty())
                c.request.insert("dstCoord", m_dst->currentData().toString());
        }
        calls.append(c);
    }

    m_running = true;
    m_run->setEnabled(false);
    setState(QStringLiteral("running"), tr("Running…"));
    const int generation = ++m_generation;
    QPointer<AddressPanel> self(this);
    // The task holds the engine: it may outlive the panel.
    QThreadPool::globalInstance()->start(
        [self, engine = m_engine, generation, text, calls]() mutable {
            for (Call &c : calls)
                c.reply = AddressApi::call(*engine, c.endpoint, c.request);
            // Queued to the GUI thread via the application object; the panel may be gone by then.
            QMetaObject::invokeMethod(
                qApp,
                [self, generation, text, calls] {
                    if (self)
                        self->showResults(generation, text, calls);
                },
                Qt::QueuedConnection);
        });
}

void AddressPanel::showResults(int generation, const QString &text, const QList<Call> &calls)
{
    if (generation != m_generation)
        return;
    m_running = false;
    m_run->setEnabled(true);
    m_calls = calls;

    QStringList errors;
    for (const Call &c : calls)
        if (!c.reply.ok())
            errors << tr("%1: %2").arg(c.endpoint, c.reply.error);
    if (calls.isEmpty())
        errors << tr("No endpoint to run.");
    m_error->setText(errors.join(QLatin1Char('\n')));
    m_error->setVisible(!errors.isEmpty());

    QJsonObject json;
    if (calls.size() == 1) {
        json = replyJson(calls.first().reply);
    } else {
        for (const Call &c : calls)
            json.insert(c.endpoint, replyJson(c.reply));
    }
    m_json->setPlainText(QString::fromUtf8(QJsonDocument(json).toJson(QJsonDocument::Indented)));

    showHighlights(text, calls);
    showDivision(calls);
    showCoordinates(calls);
    showStructure(calls);
    showAssessment(calls);
    // One endpoint run: bring its view forward.
    if (calls.size() == 1) {
        const QString e = calls.first().endpoint;
        if (e == u"division-code")
            m_views->setCurrentIndex(0);
        else if (e == u"structure" || e == u"complete" || e == u"standardize")
            m_views->setCurrentIndex(1);
        else if (e == u"transfer-coord" || e.endsWith(u"geocode"))
            m_views->setCurrentIndex(2);
        else if (e == u"assessment")
            m_views->setCurrentIndex(3);
    }
    setState(QStringLiteral("done"), errors.isEmpty() ? tr("Done.") : tr("Done, with errors."));
    emit finished();
}

void AddressPanel::showHighlights(const QString &text, const QList<Call> &calls)
{
    m_ranges.clear();
    m_highlight->setPlainText(text);
    QList<QPair<qint64, qint64>> spans;
    for (const Call &c : calls)
        if (c.reply.ok())
            collectSpans(c.reply.body, &spans);
    QTextCharFormat marked;
    marked.setBackground(QColor(255, 221, 87));
    for (const auto &[start, end] : spans) {
        const int from = codePointToPosition(text, start);
        const int to = codePointToPosition(text, end);
        if (to <= from)
            continue;
        QTextCursor cursor(m_highlight->document());
        cursor.setPosition(from);
        cursor.setPosition(to, QTextCursor::KeepAnchor);
        cursor.mergeCharFormat(marked);
        m_ranges.append({from, to});
    }
}

void AddressPanel::showDivision(const QList<Call> &calls)
{
    static const char *const keys[DivisionRowCount] = {
        "division_province", "division_city", "division_district", "division_street", "divcode"};
    for (int row = 0; row < DivisionRowCount; ++row)
        m_division->setItem(row, 0, readOnlyItem(QString()));
    for (const Call &c : calls) {
        if (!c.reply.ok())
            continue;
        if (const auto info = findObject(c.reply.body, QStringLiteral("division_info"))) {
            for (int row = 0; row < DivisionRowCount; ++row)
                m_division->setItem(row, 0,
                                    readOnlyItem(info->value(QLatin1String(keys[row])).toString()));
            return;
        }
    }
}

void AddressPanel::showCoordinates(const QList<Call> &calls)
{
    m_coords->setRowCount(0);
    m_coordSource->clear();
    std::optional<Point> point;
    for (const Call &c : calls)
        if ((point = pointOf(c)))
            break;
    if (!point)
        return;
    m_coordSource->setText(tr("From %1").arg(point->source));
    m_coords->setRowCount(int(kSystems.size()));
    for (int row = 0; row < kSystems.size(); ++row) {
        const System s = kSystems.at(row);
        const QString value = CoordTransform::formatCoordinate(
            CoordTransform::convert(point->point, point->system, s));
        m_coords->setItem(row, 0, readOnlyItem(CoordTransform::systemKey(s)));
        m_coords->setItem(row, 1, readOnlyItem(value));
        auto *copy = new QPushButton(tr("Copy"), m_coords);
        copy->setObjectName(QStringLiteral("copyCoord_") + CoordTransform::systemKey(s));
        connect(copy, &QPushButton::clicked, this,
                [value] { QGuiApplication::clipboard()->setText(value); });
        m_coords->setCellWidget(row, 2, copy);
    }
}

void AddressPanel::showStructure(const QList<Call> &calls)
{
    m_structure->setRowCount(0);
    for (const Call &c : calls) {
        if (!c.reply.ok())
            continue;
        const auto pairs = keyValuePairs(c.reply.body);
        if (pairs.isEmpty())
            continue;
        m_structure->setRowCount(int(pairs.size()));
        for (int row = 0; row < pairs.size(); ++row) {
            m_structure->setItem(row, 0, readOnlyItem(pairs.at(row).first));
            m_structure->setItem(row, 1, readOnlyItem(pairs.at(row).second));
        }
        return;
    }
}

void AddressPanel::showAssessment(const QList<Call> &calls)
{
    m_findings->setRowCount(0);
    m_assessmentCode->clear();
    for (const Call &c : calls) {
        if (!c.reply.ok())
            continue;
        const auto assessment = findObject(c.reply.body, QStringLiteral("address_assessment"));
        if (!assessment)
            continue;
        const QJsonArray findings = assessment->value("findings").toArray();
        m_assessmentCode->setText(tr("Code: %1 (%n finding(s))", nullptr, int(findings.size()))
                                      .arg(assessment->value("code").toVariant().toString()));
        m_findings->setRowCount(int(findings.size()));
        for (int row = 0; row < findings.size(); ++row) {
            const QJsonObject f = findings.at(row).toObject();
            m_findings->setItem(row, 0, readOnlyItem(f.value("code").toVariant().toString()));
            m_findings->setItem(row, 1, readOnlyItem(f.value("message").toString()));
        }
        return;
    }
}

void AddressPanel::showDataStatus()
{
    m_shownGeneration = m_engine->generation();
    const auto data = m_engine->localData();
    const qsizetype zips = data->zipCount();
    const qsizetype pois = data->poiCount();
    m_dataStatus->setText(
        zips + pois == 0
            ? tr("no zip codes or POIs imported (zipcode answers NO_DATA; geocoding stops at "
                 "district centres)")
            : tr("%1 zip code rows, %2 POIs").arg(zips).arg(pois));
}

void AddressPanel::chooseImportFile()
{
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Import %1").arg(m_importKind->currentText()),
                                     QString(), tr("CSV files (*.csv);;All files (*)"));
    if (path.isEmpty())
        return;
    const auto kind = AddressStore::parseKind(m_importKind->currentData().toString());
    importFile(*kind, path, m_importReplace->isChecked());
}

void AddressPanel::importFile(AddressStore::Kind kind, const QString &path, bool replace)
{
    if (m_importing)
        return;
    m_importing = true;
    m_importButton->setEnabled(false);
    m_importSummary->setStyleSheet(QString());
    m_importSummary->setText(tr("Importing %1…").arg(path));
    // A thread of its own with its own connection: big files never block the window. The job
    // is the panel's child: closing the window waits for it rather than leave it running.
    AddressImportJob *job = m_family->importCsv(kind, path, replace, this);
    connect(job, &AddressImportJob::progress, this, [this, path](qsizetype staged, qsizetype rows) {
        m_importSummary->setText(
            tr("Importing %1… %2 of %3 rows written").arg(path).arg(staged).arg(rows));
    });
    connect(job, &AddressImportJob::finished, this, &AddressPanel::showImportReport);
}

void AddressPanel::showImportReport(const AddressStore::ImportReport &report)
{
    m_importing = false;
    m_importButton->setEnabled(true);
    m_lastImport = report;
    QStringList lines{report.ok() ? report.summary() : tr("Import failed: %1").arg(report.fatal)};
    for (qsizetype i = 0; i < report.errors.size() && i < 5; ++i)
        lines << tr("line %1: %2").arg(report.errors.at(i).line).arg(report.errors.at(i).reason);
    if (report.errors.size() > 5)
        lines << tr("… and %1 more rejected rows").arg(report.errors.size() - 5);
    m_importSummary->setText(lines.join(QLatin1Char('\n')));
    m_importSummary->setStyleSheet(
        report.ok() && report.errors.isEmpty() ? QString() : QStringLiteral("color: #c0392b;"));
    showDataStatus();
    emit importFinished();
}
