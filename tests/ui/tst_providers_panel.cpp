// Settings > Providers, driven like a user (offscreen) against a real ProviderRegistry whose
// config file is a temporary file, and a real upstream: the project's fake_upstream program on
// 127.0.0.1 (and a closed 127.0.0.1 port for the failure case).
#include "control/ControlFamily.h"
#include "ControlTokenModel.h"
#include "FakeUpstreamProcess.h"
#include "llm/GatewayFamily.h"
#include "llm/ProviderRegistry.h"
#include "MainWindow.h"
#include "ModelFormat.h"
#include "ProviderDialog.h"
#include "ProvidersPanel.h"
#include "Services.h"
#include "TestDatabase.h"

#include <QAbstractButton>
#include <QAbstractItemView>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QElapsedTimer>
#include <QFile>
#include <QGroupBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPointer>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTableView>
#include <QTableWidget>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>
#include <QTextEdit>

namespace {

// Distinctive middles: the masked form keeps only the first and last four characters.
const QString kKey1 = QStringLiteral("sk-up-111111SECRETONE111111-w1yz");
const QString kKey2 = QStringLiteral("sk-up-222222SECRETTWO222222-9999");
const QStringList kSecretParts = {QStringLiteral("SECRETONE"), QStringLiteral("SECRETTWO"),
                                  QStringLiteral("111111"), QStringLiteral("222222")};

// Every text any widget of the application shows or exposes: labels, buttons, line edits (also
// password fields), spin boxes, combo boxes, group titles, tooltips, accessible names and every
// role of every item view's model.
QStringList allWidgetTexts()
{
    QStringList out;
    for (QWidget *w : QApplication::allWidgets()) {
        out << w->windowTitle() << w->toolTip() << w->statusTip() << w->whatsThis()
            << w->accessibleName() << w->accessibleDescription();
        if (auto *e = qobject_cast<QLineEdit *>(w))
            out << e->text() << e->displayText() << e->placeholderText() << e->selectedText();
        if (auto *l = qobject_cast<QLabel *>(w))
            out << l->text();
        if (auto *b = qobject_cast<QAbstractButton *>(w))
            out << b->text();
        if (auto *s = qobject_cast<QAbstractSpinBox *>(w))
            out << s->text();
        if (auto *g = qobject_cast<QGroupBox *>(w))
            out << g->title();
        if (auto *t = qobject_cast<QTextEdit *>(w))
            out << t->toPlainText();
        if (auto *t = qobject_cast<QPlainTextEdit *>(w))
            out << t->toPlainText();
        if (auto *c = qobject_cast<QComboBox *>(w))
            for (int i = 0; i < c->count(); ++i)
                out << c->itemText(i) << c->itemData(i).toString();
        if (auto *v = qobject_cast<QAbstractItemView *>(w); v && v->model()) {
            const QAbstractItemModel *m = v->model();
            for (int role : allRolesToProbe()) {
                for (int c = 0; c < m->columnCount(); ++c)
                    out << m->headerData(c, Qt::Horizontal, role).toString();
                for (int r = 0; r < m->rowCount(); ++r)
                    for (int c = 0; c < m->columnCount(); ++c)
                        out << m->data(m->index(r, c), role).toString();
            }
        }
    }
    return out;
}

QString leakedSecret()
{
    const QStringList texts = allWidgetTexts();
    for (const QString &t : texts)
        for (const QString &part : kSecretParts)
            if (t.contains(part))
                return t;
    return {};
}

QJsonObject readJson(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

// The value at a path of object keys, undefined if any step is missing.
QJsonValue jget(const QJsonValue &root, const QStringList &path)
{
    QJsonValue v = root;
    for (const QString &key : path)
        v = v.toObject().value(key);
    return v;
}

void writeJson(const QString &path, const QJsonObject &o)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(QJsonDocument(o).toJson());
}

} // namespace

class TestProvidersPanel : public QObject
{
    Q_OBJECT
private slots:
    void init();
    void cleanup();
    void keysMaskedAndNeverShown();
    void dialogValidation();
    void addEditRemoveSaveRoundTrip();
    void refusedApplyShowsError();
    void testConnectionSucceedsAgainstLocalUpstream();
    void testConnectionFailsAgainstClosedPort();
    void testConnectionReportsRefusedKey();
    void catalogRefreshAndPriceOverride();
    void mainWindowShowsProvidersPanel();
    void mainWindowOverServices();

private:
    static QPushButton *button(QWidget *parent, const char *name)
    {
        return parent->findChild<QPushButton *>(QLatin1String(name));
    }
    static QPushButton *okButton(ProviderDialog *dialog)
    {
        return dialog->findChild<QDialogButtonBox *>("buttons")->button(QDialogButtonBox::Ok);
    }
    static QString cell(ProvidersPanel &panel, const QString &provider, int column)
    {
        QTableWidget *t = panel.providersTable();
        for (int row = 0; row < t->rowCount(); ++row)
            if (t->item(row, ProvidersPanel::NameColumn)->text() == provider)
                return t->item(row, column)->text();
        return {};
    }
    // Opens the Add dialog and fills in the answers.
    static ProviderDialog *openAdd(ProvidersPanel &panel, const QString &name, ProviderType type,
                                   const QString &url, const QStringList &keys = {})
    {
        QTest::mouseClick(button(&panel, "addProviderButton"), Qt::LeftButton);
        auto *dialog = panel.findChild<ProviderDialog *>();
        if (!dialog)
            return nullptr;
        QTest::keyClicks(dialog->findChild<QLineEdit *>("providerNameEdit"), name);
        auto *combo = dialog->findChild<QComboBox *>("providerTypeCombo");
        combo->setCurrentIndex(combo->findData(int(type)));
        auto *urlEdit = dialog->findChild<QLineEdit *>("baseUrlEdit");
        urlEdit->selectAll();
        QTest::keyClicks(urlEdit, url);
        for (const QString &k : keys) {
            QTest::keyClicks(dialog->findChild<QLineEdit *>("newKeyEdit"), k);
            QTest::keyClick(dialog->findChild<QLineEdit *>("newKeyEdit"), Qt::Key_Return);
        }
        return dialog;
    }
    static void accept(ProviderDialog *dialog)
    {
        QPointer<ProviderDialog> d = dialog;
        QVERIFY(okButton(dialog)->isEnabled());
        QTest::mouseClick(okButton(dialog), Qt::LeftButton);
        QTRY_VERIFY(d.isNull());
    }
    void clickSave(ProvidersPanel &panel)
    {
        QPushButton *save = button(&panel, "saveProvidersButton");
        QVERIFY(save->isEnabled());
        QTest::mouseClick(save, Qt::LeftButton);
    }
    QString messageText(ProvidersPanel &panel)
    {
        return panel.findChild<QLabel *>("providersMessageLabel")->text();
    }

    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_path;
};

void TestProvidersPanel::init()
{
    m_dir = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid());
    m_path = m_dir->filePath(QStringLiteral("switchyard.json"));
}

void TestProvidersPanel::cleanup()
{
    m_dir.reset();
}

void TestProvidersPanel::keysMaskedAndNeverShown()
{
    ProviderRegistry registry(GatewayConfig::defaults(), m_path);
    ProvidersPanel panel(&registry);
    panel.show();
    QVERIFY(panel.selectProvider(QStringLiteral("openai")));
    QCOMPARE(cell(panel, "openai", ProvidersPanel::KeysColumn), QStringLiteral("No keys"));

    QTest::mouseClick(button(&panel, "editProviderButton"), Qt::LeftButton);
    QPointer<ProviderDialog> dialog = panel.findChild<ProviderDialog *>();
    QVERIFY(dialog);
    auto *entry = dialog->findChild<QLineEdit *>("newKeyEdit");
    auto *list = dialog->findChild<QListWidget *>("keysList");
    QCOMPARE(entry->echoMode(), QLineEdit::Password);

    // Enter adds the key (and does not accept the dialog); the field is emptied for good.
    QTest::keyClicks(entry, kKey1);
    QVERIFY(!entry->displayText().contains(QStringLiteral("SECRETONE"))); // typed, but masked
    QTest::keyClick(entry, Qt::Key_Return);
    QVERIFY(dialog && dialog->isVisible());
    QCOMPARE(entry->text(), QString());
    QVERIFY(!entry->isUndoAvailable());
    QCOMPARE(list->count(), 1);
    QCOMPARE(list->item(0)->text(), QStringLiteral("1. sk-u••••w1yz"));
    // The Add key button does the same.
    QTest::keyClicks(entry, kKey2);
    QTest::mouseClick(dialog->findChild<QPushButton *>("addKeyButton"), Qt::LeftButton);
    QCOMPARE(list->count(), 2);
    QCOMPARE(entry->text(), QString());
    // A key cannot be entered twice, nor with spaces.
    QTest::keyClicks(entry, kKey1);
    QTest::keyClick(entry, Qt::Key_Return);
    QCOMPARE(list->count(), 2);
    QVERIFY(dialog->findChild<QLabel *>("validationLabel")->text().contains("already"));
    entry->setText(QString());
    QTest::keyClicks(entry, "sk with space");
    QTest::keyClick(entry, Qt::Key_Return);
    QCOMPARE(list->count(), 2);
    QVERIFY(dialog->findChild<QLabel *>("validationLabel")->text().contains("spaces"));
    entry->setText(QString());
    // Once entered, the keys are nowhere in the dialog or the panel.
    QCOMPARE(leakedSecret(), QString());
    accept(dialog);

    QCOMPARE(cell(panel, "openai", ProvidersPanel::KeysColumn),
             QStringLiteral("2 keys: sk-u••••w1yz, sk-u••••9999"));
    QCOMPARE(leakedSecret(), QString());
    QCOMPARE(panel.draft().provider("openai")->keys, QStringList({kKey1, kKey2}));

    // Saved: the registry and the file hold them; the window still shows them masked.
    clickSave(panel);
    QCOMPARE(messageText(panel), QStringLiteral("Saved to %1 and applied.").arg(m_path));
    QCOMPARE(registry.config().provider("openai")->keys, QStringList({kKey1, kKey2}));
    QCOMPARE(jget(readJson(m_path), {"gateway", "providers", "openai", "keys"}).toArray(),
             QJsonArray({kKey1, kKey2}));
    QCOMPARE(leakedSecret(), QString());

    // Reopened: keys are listed masked, can be removed, never revealed.
    QTest::mouseClick(button(&panel, "editProviderButton"), Qt::LeftButton);
    dialog = panel.findChild<ProviderDialog *>();
    QVERIFY(dialog);
    list = dialog->findChild<QListWidget *>("keysList");
    QCOMPARE(list->count(), 2);
    QCOMPARE(list->item(1)->text(), QStringLiteral("2. sk-u••••9999"));
    QCOMPARE(leakedSecret(), QString());
    list->setCurrentRow(0);
    QTest::mouseClick(dialog->findChild<QPushButton *>("removeKeyButton"), Qt::LeftButton);
    QCOMPARE(list->count(), 1);
    QCOMPARE(list->item(0)->text(), QStringLiteral("1. sk-u••••9999"));
    accept(dialog);
    QCOMPARE(cell(panel, "openai", ProvidersPanel::KeysColumn),
             QStringLiteral("1 key: sk-u••••9999"));
    QCOMPARE(panel.draft().provider("openai")->keys, QStringList({kKey2}));
    QCOMPARE(leakedSecret(), QString());

    // A key typed but not yet added is taken on OK and not left in the field.
    QTest::mouseClick(button(&panel, "editProviderButton"), Qt::LeftButton);
    dialog = panel.findChild<ProviderDialog *>();
    QTest::keyClicks(dialog->findChild<QLineEdit *>("newKeyEdit"), kKey1);
    accept(dialog);
    QCOMPARE(panel.draft().provider("openai")->keys, QStringList({kKey2, kKey1}));
    QCOMPARE(leakedSecret(), QString());

    // Cancelled edits change nothing.
    QTest::mouseClick(button(&panel, "editProviderButton"), Qt::LeftButton);
    dialog = panel.findChild<ProviderDialog *>();
    dialog->findChild<QListWidget *>("keysList")->setCurrentRow(0);
    QTest::mouseClick(dialog->findChild<QPushButton *>("removeKeyButton"), Qt::LeftButton);
    dialog->reject();
    QTRY_VERIFY(dialog.isNull());
    QCOMPARE(panel.draft().provider("openai")->keys, QStringList({kKey2, kKey1}));
    QCOMPARE(leakedSecret(), QString());
}

void TestProvidersPanel::dialogValidation()
{
    ProviderRegistry registry(GatewayConfig::defaults(), m_path);
    ProvidersPanel panel(&registry);
    panel.show();
    QTest::mouseClick(button(&panel, "addProviderButton"), Qt::LeftButton);
    QPointer<ProviderDialog> dialog = panel.findChild<ProviderDialog *>();
    QVERIFY(dialog);
    auto *name = dialog->findChild<QLineEdit *>("providerNameEdit");
    auto *url = dialog->findChild<QLineEdit *>("baseUrlEdit");
    auto *problem = dialog->findChild<QLabel *>("validationLabel");
    QPushButton *ok = okButton(dialog);

    QVERIFY(!ok->isEnabled());
    QCOMPARE(problem->text(), QStringLiteral("Enter a name for the provider."));
    QTest::keyClicks(name, "openai");
    QVERIFY(!ok->isEnabled());
    QCOMPARE(problem->text(),
             QStringLiteral("A provider named 'openai' already exists; choose another name."));
    name->setText(QStringLiteral("a/b"));
    QVERIFY(problem->text().contains("cannot contain '/'"));
    name->setText(QStringLiteral("local"));
    // The URL is next.
    QVERIFY(!ok->isEnabled());
    QVERIFY(problem->text().contains("http:// or https://"));
    for (const char *bad : {"ftp://example.com/v1", "not a url", "http://", "https:///v1"}) {
        url->setText(QLatin1String(bad));
        QVERIFY2(!ok->isEnabled(), bad);
        QVERIFY2(problem->text().contains("http:// or https://"), bad);
    }
    url->setText(QStringLiteral("https://user:pw@example.com/v1"));
    QVERIFY(!ok->isEnabled());
    QVERIFY(problem->text().contains("user name or password"));
    url->setText(QStringLiteral("https://example.com/v1?x=1"));
    QVERIFY(!ok->isEnabled());
    QVERIFY(problem->text().contains("query"));
    url->setText(QStringLiteral("http://127.0.0.1:8000/v1/"));
    QVERIFY(ok->isEnabled());
    QVERIFY(problem->isHidden());
    QCOMPARE(dialog->provider().baseUrl, QStringLiteral("http://127.0.0.1:8000/v1"));

    // Editing keeps the provider's own name available.
    dialog->reject();
    QTRY_VERIFY(dialog.isNull());
    QVERIFY(panel.selectProvider("anthropic"));
    QTest::mouseClick(button(&panel, "editProviderButton"), Qt::LeftButton);
    dialog = panel.findChild<ProviderDialog *>();
    QVERIFY(dialog);
    QVERIFY(okButton(dialog)->isEnabled());
    dialog->findChild<QLineEdit *>("providerNameEdit")->setText("openai");
    QVERIFY(!okButton(dialog)->isEnabled());
    dialog->reject();
    QTRY_VERIFY(dialog.isNull());
    QVERIFY(!panel.hasUnsavedChanges());
}

void TestProvidersPanel::addEditRemoveSaveRoundTrip()
{
    // Other sections, and gateway settings the panel does not show, are kept.
    const QJsonObject server{{"max_connections", 77}, {"idle_timeout_ms", 12345}};
    const QJsonObject limits{{"default", QJsonObject{{"chat", 5}}}};
    writeJson(m_path, {{"server", server},
                       {"rate_limits", limits},
                       {"gateway", QJsonObject{{"keepalive_ms", 5000}}}});
    ProviderRegistry registry(GatewayConfig::fromJson(readJson(m_path)["gateway"].toObject()),
                              m_path);
    ProvidersPanel panel(&registry);
    panel.show();
    QPushButton *save = button(&panel, "saveProvidersButton");
    QVERIFY(!save->isEnabled()); // nothing to save yet

    // Add.
    ProviderDialog *dialog =
        openAdd(panel, "local", ProviderType::OpenAI, "http://127.0.0.1:9/v1", {kKey1});
    QVERIFY(dialog);
    dialog->findChild<QSpinBox *>("connectTimeoutSpin")->setValue(1234);
    dialog->findChild<QSpinBox *>("firstByteTimeoutSpin")->setValue(5000);
    dialog->findChild<QSpinBox *>("idleTimeoutSpin")->setValue(6000);
    dialog->findChild<QSpinBox *>("totalTimeoutSpin")->setValue(0);
    dialog->findChild<QSpinBox *>("messagesTimeoutSpin")->setValue(90000);
    dialog->findChild<QSpinBox *>("keyRestSpin")->setValue(7000);
    accept(dialog);
    QCOMPARE(panel.selectedProvider(), QStringLiteral("local"));
    QCOMPARE(cell(panel, "local", ProvidersPanel::TypeColumn), QStringLiteral("openai"));
    QCOMPARE(cell(panel, "local", ProvidersPanel::BaseUrlColumn),
             QStringLiteral("http://127.0.0.1:9/v1"));
    QCOMPARE(cell(panel, "local", ProvidersPanel::KeysColumn),
             QStringLiteral("1 key: sk-u••••w1yz"));
    QCOMPARE(cell(panel, "local", ProvidersPanel::TimeoutsColumn),
             QStringLiteral("connect 1234 ms, first byte 5 s, idle 6 s, total off, messages 90 s"));
    QVERIFY(panel.hasUnsavedChanges());
    QVERIFY(!registry.config().provider("local")); // a draft until saved
    QVERIFY(!readJson(m_path)["gateway"].toObject()["providers"].toObject().contains("local"));

    clickSave(panel);
    QVERIFY(!panel.hasUnsavedChanges());
    QVERIFY(!save->isEnabled());
    QVERIFY(registry.config().provider("local"));
    QJsonObject root = readJson(m_path);
    QCOMPARE(root["server"].toObject(), server);
    QCOMPARE(root["rate_limits"].toObject(), limits);
    QCOMPARE(jget(root, {"gateway", "keepalive_ms"}).toInt(), 5000);
    QJsonObject local = jget(root, {"gateway", "providers", "local"}).toObject();
    QCOMPARE(local["type"].toString(), QStringLiteral("openai"));
    QCOMPARE(local["base_url"].toString(), QStringLiteral("http://127.0.0.1:9/v1"));
    QCOMPARE(local["keys"].toArray(), QJsonArray({kKey1}));
    QCOMPARE(local["key_rest_ms"].toInt(), 7000);
    const QJsonObject timeouts = local["timeouts"].toObject();
    QCOMPARE(timeouts["connect_ms"].toInt(), 1234);
    QCOMPARE(timeouts["first_byte_ms"].toInt(), 5000);
    QCOMPARE(timeouts["idle_ms"].toInt(), 6000);
    QCOMPARE(timeouts["total_ms"].toInt(), 0);
    QCOMPARE(timeouts["messages_ms"].toInt(), 90000);
    // The file reads back into the same provider.
    const GatewayConfig reread = GatewayConfig::fromJson(root["gateway"].toObject());
    QCOMPARE(reread.provider("local")->connectTimeoutMs, 1234);
    QCOMPARE(reread.provider("local")->keys, QStringList{kKey1});

    // Edit: rename, new URL (trailing slash trimmed), type; keys kept.
    QVERIFY(panel.selectProvider("local"));
    QTest::mouseClick(button(&panel, "editProviderButton"), Qt::LeftButton);
    dialog = panel.findChild<ProviderDialog *>();
    QVERIFY(dialog);
    QCOMPARE(dialog->findChild<QSpinBox *>("connectTimeoutSpin")->value(), 1234);
    dialog->findChild<QLineEdit *>("providerNameEdit")->setText("local2");
    dialog->findChild<QLineEdit *>("baseUrlEdit")->setText("https://127.0.0.1:10/v2/");
    auto *combo = dialog->findChild<QComboBox *>("providerTypeCombo");
    combo->setCurrentIndex(combo->findData(int(ProviderType::Anthropic)));
    accept(dialog);
    QCOMPARE(panel.selectedProvider(), QStringLiteral("local2"));
    clickSave(panel);
    root = readJson(m_path);
    QVERIFY(!jget(root, {"gateway", "providers"}).toObject().contains("local"));
    local = jget(root, {"gateway", "providers", "local2"}).toObject();
    QCOMPARE(local["type"].toString(), QStringLiteral("anthropic"));
    QCOMPARE(local["base_url"].toString(), QStringLiteral("https://127.0.0.1:10/v2"));
    QCOMPARE(local["keys"].toArray(), QJsonArray({kKey1}));
    QCOMPARE(jget(local, {"timeouts", "connect_ms"}).toInt(), 1234);
    QCOMPARE(root["server"].toObject(), server);

    // Remove, after confirmation (a cancelled confirmation changes nothing).
    QVERIFY(panel.selectProvider("local2"));
    QTest::mouseClick(button(&panel, "removeProviderButton"), Qt::LeftButton);
    QPointer<QMessageBox> box = panel.findChild<QMessageBox *>("removeProviderConfirmation");
    QVERIFY(box);
    QVERIFY(box->text().contains("local2"));
    QTest::mouseClick(box->findChild<QPushButton *>("cancelButton"), Qt::LeftButton);
    QTRY_VERIFY(box.isNull());
    QVERIFY(!panel.hasUnsavedChanges());
    QTest::mouseClick(button(&panel, "removeProviderButton"), Qt::LeftButton);
    box = panel.findChild<QMessageBox *>("removeProviderConfirmation");
    QVERIFY(box);
    QTest::mouseClick(box->findChild<QPushButton *>("confirmButton"), Qt::LeftButton);
    QTRY_VERIFY(box.isNull());
    QVERIFY(panel.hasUnsavedChanges());
    QCOMPARE(cell(panel, "local2", ProvidersPanel::NameColumn), QString());
    clickSave(panel);
    root = readJson(m_path);
    QVERIFY(!jget(root, {"gateway", "providers"}).toObject().contains("local2"));
    QVERIFY(jget(root, {"gateway", "providers"}).toObject().contains("openai"));
    QCOMPARE(root["server"].toObject(), server);
    QCOMPARE(root["rate_limits"].toObject(), limits);
    QCOMPARE(jget(root, {"gateway", "keepalive_ms"}).toInt(), 5000);
    QVERIFY(!registry.config().provider("local2"));
    QCOMPARE(panel.providersTable()->rowCount(), int(registry.config().providers.size()));
}

void TestProvidersPanel::refusedApplyShowsError()
{
    writeJson(m_path, {{"server", QJsonObject{{"max_connections", 5}}}});
    const QByteArray before = [&] {
        QFile f(m_path);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }();
    ProviderRegistry registry(GatewayConfig::defaults(), m_path);
    ProvidersPanel panel(&registry);
    panel.show();
    // The default catalog serves models through "openai": removing it is refused on Save.
    QVERIFY(panel.selectProvider("openai"));
    QTest::mouseClick(button(&panel, "removeProviderButton"), Qt::LeftButton);
    QPointer<QMessageBox> box = panel.findChild<QMessageBox *>("removeProviderConfirmation");
    QVERIFY(box);
    QVERIFY(box->text().contains("Save will be refused")); // said up front
    QTest::mouseClick(box->findChild<QPushButton *>("confirmButton"), Qt::LeftButton);
    QTRY_VERIFY(box.isNull());
    QCOMPARE(cell(panel, "openai", ProvidersPanel::NameColumn), QString());

    clickSave(panel);
    auto *message = panel.findChild<QLabel *>("providersMessageLabel");
    QVERIFY(message->isVisible());
    QVERIFY(message->property("error").toBool());
    QVERIFY2(message->text().startsWith("Not saved, nothing changed: "),
             qPrintable(message->text()));
    QVERIFY2(message->text().contains("'openai'") && message->text().contains("not configured"),
             qPrintable(message->text()));
    // Nothing changed: registry, file; the draft is kept for fixing.
    QVERIFY(registry.config().provider("openai"));
    QFile f(m_path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), before);
    QVERIFY(panel.hasUnsavedChanges());
    QVERIFY(button(&panel, "saveProvidersButton")->isEnabled());

    // Revert brings the applied configuration back.
    QTest::mouseClick(button(&panel, "revertProvidersButton"), Qt::LeftButton);
    QVERIFY(!panel.hasUnsavedChanges());
    QCOMPARE(cell(panel, "openai", ProvidersPanel::NameColumn), QStringLiteral("openai"));
    QVERIFY(message->isHidden());
}

void TestProvidersPanel::testConnectionSucceedsAgainstLocalUpstream()
{
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    ProviderRegistry registry(GatewayConfig::defaults(), m_path);
    ProvidersPanel panel(&registry);
    panel.show();
    // Tested as drafted: no need to save first.
    accept(openAdd(panel, "fake", ProviderType::OpenAI, fake.base("/v1"), {kKey1}));
    QCOMPARE(panel.selectedProvider(), QStringLiteral("fake"));
    QPushButton *test = button(&panel, "testConnectionButton");
    auto *result = panel.findChild<QLabel *>("testResultLabel");
    QVERIFY(test->isEnabled());
    QTest::mouseClick(test, Qt::LeftButton);
    QVERIFY(!test->isEnabled()); // while it runs
    QCOMPARE(result->property("result").toString(), QStringLiteral("running"));
    QTRY_COMPARE_WITH_TIMEOUT(result->property("result").toString(), QStringLiteral("ok"), 20000);
    QVERIFY2(result->text().startsWith("fake: connection OK."), qPrintable(result->text()));
    QVERIFY(result->text().contains("models listed"));
    QVERIFY(result->styleSheet().contains("#1b7e2b"));
    QVERIFY(test->isEnabled());
    QCOMPARE(leakedSecret(), QString());
}

void TestProvidersPanel::testConnectionFailsAgainstClosedPort()
{
    // A port that was just free on 127.0.0.1 and now has no listener.
    quint16 port = 0;
    {
        QTcpServer probe;
        QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
        port = probe.serverPort();
    }
    ProviderRegistry registry(GatewayConfig::defaults(), m_path);
    ProvidersPanel panel(&registry);
    panel.show();
    accept(openAdd(panel, "closed", ProviderType::OpenAI,
                   QStringLiteral("http://127.0.0.1:%1/v1").arg(port), {kKey1}));
    QPushButton *test = button(&panel, "testConnectionButton");
    auto *result = panel.findChild<QLabel *>("testResultLabel");
    QTest::mouseClick(test, Qt::LeftButton);
    QVERIFY(!test->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(result->property("result").toString(), QStringLiteral("failed"),
                              20000);
    QVERIFY2(result->text().startsWith("closed: connection failed."), qPrintable(result->text()));
    QVERIFY(result->styleSheet().contains("#b3261e"));
    QVERIFY(test->isEnabled());
    QCOMPARE(leakedSecret(), QString());
}

void TestProvidersPanel::testConnectionReportsRefusedKey()
{
    FakeUpstreamProcess fake;
    QVERIFY(fake.start({QStringLiteral("--require-key"), QStringLiteral("sk-the-right-key-0000")}));
    ProviderRegistry registry(GatewayConfig::defaults(), m_path);
    ProvidersPanel panel(&registry);
    panel.show();
    accept(openAdd(panel, "wrongkey", ProviderType::OpenAI, fake.base("/v1"), {kKey1}));
    auto *result = panel.findChild<QLabel *>("testResultLabel");
    QTest::mouseClick(button(&panel, "testConnectionButton"), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(result->property("result").toString(), QStringLiteral("failed"),
                              20000);
    QVERIFY2(result->text().contains("HTTP 401"), qPrintable(result->text()));
    QCOMPARE(leakedSecret(), QString());
}

void TestProvidersPanel::catalogRefreshAndPriceOverride()
{
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    ProviderRegistry registry(GatewayConfig::defaults(), m_path);
    ProvidersPanel panel(&registry);
    panel.show();
    accept(openAdd(panel, "fakecat", ProviderType::Catalog, fake.base("/api/v1")));
    auto *box = panel.findChild<QGroupBox *>("catalogBox");
    auto *status = panel.findChild<QLabel *>("catalogStatusLabel");
    QPushButton *refresh = button(&panel, "refreshCatalogButton");
    QVERIFY(box->isVisible());
    // Not in the running gateway yet: nothing to refresh.
    QVERIFY(!refresh->isEnabled());
    QVERIFY(status->text().startsWith("Save first"));
    clickSave(panel);
    QCOMPARE(panel.selectedProvider(), QStringLiteral("fakecat"));
    QVERIFY(refresh->isEnabled());
    QVERIFY(status->text().contains("Not loaded yet."));

    QTest::mouseClick(refresh, Qt::LeftButton);
    QVERIFY(!refresh->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(refresh->isEnabled(), 20000);
    const auto live = registry.snapshot()->live.value("fakecat");
    QVERIFY(!live.isEmpty());
    QVERIFY2(status->text().startsWith(QStringLiteral("%1 models, fetched").arg(live.size())),
             qPrintable(status->text()));
    QTableView *view = panel.catalogView();
    QAbstractItemModel *models = view->model();
    QCOMPARE(models->rowCount(), int(live.size()));
    // Each row shows the listed prices per 1M tokens.
    for (int row = 0; row < models->rowCount(); ++row) {
        const QString id = models->index(row, ProvidersPanel::ModelIdColumn).data().toString();
        QVERIFY(live.contains(id));
        QCOMPARE(models->index(row, ProvidersPanel::InputPriceColumn).data().toString(),
                 ModelFormat::credits(live[id].price.input));
        QCOMPARE(models->index(row, ProvidersPanel::OutputPriceColumn).data().toString(),
                 ModelFormat::credits(live[id].price.output));
        QCOMPARE(models->index(row, ProvidersPanel::OverrideColumn).data().toString(), QString());
    }

    // The filter narrows the list.
    const QString firstId = models->index(0, ProvidersPanel::ModelIdColumn).data().toString();
    QTest::keyClicks(panel.findChild<QLineEdit *>("catalogFilterEdit"), firstId);
    QVERIFY(models->rowCount() >= 1 && models->rowCount() < int(live.size()) + 1);
    QCOMPARE(models->index(0, ProvidersPanel::ModelIdColumn).data().toString(), firstId);

    // Override the first model's price: part of the draft until saved.
    QPushButton *setOverride = button(&panel, "setOverrideButton");
    QVERIFY(!setOverride->isEnabled()); // no model selected
    view->selectRow(0);
    QVERIFY(setOverride->isEnabled());
    auto *input = panel.findChild<QLineEdit *>("overrideInputEdit");
    auto *output = panel.findChild<QLineEdit *>("overrideOutputEdit");
    QCOMPARE(input->text(), ModelFormat::credits(live[firstId].price.input));
    input->setText("abc");
    QTest::mouseClick(setOverride, Qt::LeftButton);
    QVERIFY(panel.findChild<QLabel *>("overrideMessageLabel")->text().contains("input price"));
    QVERIFY(!panel.hasUnsavedChanges());
    input->setText("1.5");
    output->setText("3");
    QTest::mouseClick(setOverride, Qt::LeftButton);
    QVERIFY(panel.hasUnsavedChanges());
    QCOMPARE(models->index(0, ProvidersPanel::OverrideColumn).data().toString(),
             QStringLiteral("in 1.50 / out 3.00"));
    clickSave(panel);
    QJsonObject overrides =
        jget(readJson(m_path), {"gateway", "providers", "fakecat", "price_overrides"}).toObject();
    QCOMPARE(jget(overrides, {firstId, "input"}).toString(), QStringLiteral("1.500000000"));
    QCOMPARE(jget(overrides, {firstId, "output"}).toString(), QStringLiteral("3.000000000"));
    // Applied: the live list prices the model with the override.
    const CatalogModel overridden = registry.snapshot()->live.value("fakecat").value(firstId);
    QVERIFY(overridden.overridden);
    QCOMPARE(overridden.price.input, qint64(1'500'000'000));
    QTRY_COMPARE(models->index(0, ProvidersPanel::InputPriceColumn).data().toString(),
                 QStringLiteral("1.50"));

    // Cleared again.
    view->selectRow(0);
    QPushButton *clear = button(&panel, "clearOverrideButton");
    QVERIFY(clear->isEnabled());
    QTest::mouseClick(clear, Qt::LeftButton);
    clickSave(panel);
    overrides =
        jget(readJson(m_path), {"gateway", "providers", "fakecat", "price_overrides"}).toObject();
    QVERIFY(!overrides.contains(firstId));
    QVERIFY(!registry.snapshot()->live.value("fakecat").value(firstId).overridden);

    // Non-catalog providers have no catalog section.
    QVERIFY(panel.selectProvider("openai"));
    QVERIFY(!box->isVisible());
}

// The panel is the gateway family's: the window shows it when its services have that family,
// over the family's own registry, and not otherwise.
void TestProvidersPanel::mainWindowShowsProvidersPanel()
{
    QTemporaryDir dir;
    ServerSettings settings = ServerSettings::defaults();
    settings.configPath = m_path;
    FamilyList families;
    families.push_back(std::make_unique<ControlFamily>());
    Services withoutGateway(settings, DatabaseConfig::sqlite(dir.filePath(QStringLiteral("a.db"))),
                            std::move(families));
    withoutGateway.start();
    {
        MainWindow window(withoutGateway);
        QVERIFY(!window.showPanel(QStringLiteral("Providers")));
        QVERIFY(window.findChildren<ProvidersPanel *>().isEmpty());
    }
    families.clear();
    families.push_back(std::make_unique<GatewayFamily>());
    Services withGateway(settings, DatabaseConfig::sqlite(dir.filePath(QStringLiteral("b.db"))),
                         std::move(families));
    withGateway.start();
    MainWindow window(withGateway);
    window.show();
    QVERIFY(window.showPanel(QStringLiteral("Providers")));
    auto *panel = qobject_cast<ProvidersPanel *>(window.currentPanel());
    QVERIFY(panel);
    QCOMPARE(panel->objectName(), QStringLiteral("providersPanel"));
    QCOMPARE(window.findChildren<ProvidersPanel *>().size(), 1);
    const ProviderRegistry &registry = withGateway.family<GatewayFamily>()->registry();
    QCOMPARE(panel->providersTable()->rowCount(), int(registry.config().providers.size()));
    withGateway.stop();
    withoutGateway.stop();
}

// The program's window (MainWindow over Services): the gateway family's registry behind the
// Providers panel, and the scopes every family declares offered for new control tokens.
void TestProvidersPanel::mainWindowOverServices()
{
    QTemporaryDir dir;
    ServerSettings settings = ServerSettings::defaults();
    settings.configPath = m_path;
    Services services(settings, DatabaseConfig::sqlite(dir.filePath(QStringLiteral("s.db"))));
    services.start();
    MainWindow window(services);
    window.show();
    QVERIFY(window.showPanel(QStringLiteral("Providers")));
    auto *panel = qobject_cast<ProvidersPanel *>(window.currentPanel());
    QVERIFY(panel);
    QCOMPARE(panel->providersTable()->rowCount(),
             int(services.family<GatewayFamily>()->registry().config().providers.size()));
    QVERIFY(window.showPanel(QStringLiteral("Control Tokens")));
    for (const QString &scope : services.scopes())
        QVERIFY2(window.findChild<QCheckBox *>(QStringLiteral("scope_") + scope),
                 qPrintable(scope));
    QVERIFY(window.findChild<QCheckBox *>(QStringLiteral("scope_providers:write")));
    QCOMPARE(window.controlTokenModel()->knownScopes(), services.scopes());
    services.stop();
}

QTEST_MAIN(TestProvidersPanel)
#include "tst_providers_panel.moc"
