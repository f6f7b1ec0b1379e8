#include "ApiKeyModel.h"
#include "ApiKeysPanel.h"
#include "CreateApiKeyDialog.h"
#include "CreatedSecretDialog.h"
#include "MainWindow.h"
#include "Pipeline.h"
#include "Server.h"
#include "ServerHost.h"
#include "Services.h"

#include <QDialogButtonBox>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QPointer>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

// The window and the running server share one DatabaseService: a key created in Settings >
// API Keys authenticates at once, and revoking it there makes the server refuse it at once,
// although the server caches credentials (the announcement clears the cache, not the TTL).
class TestRevokeEndToEnd : public QObject
{
    Q_OBJECT
private slots:
    void revokedKeyIsRefused();

private:
    struct Reply
    {
        int status = 0;
        QJsonObject body;
    };
    Reply get(const QUrl &url, const QString &key);

    QNetworkAccessManager m_net;
};

TestRevokeEndToEnd::Reply TestRevokeEndToEnd::get(const QUrl &url, const QString &key)
{
    QNetworkRequest request(url);
    if (!key.isEmpty())
        request.setRawHeader("Authorization", "Bearer " + key.toLatin1());
    QNetworkReply *reply = m_net.get(request);
    if (!reply->isFinished()) {
        QSignalSpy finished(reply, &QNetworkReply::finished);
        finished.wait(10'000); // a timeout leaves status 0, which every check rejects
    }
    Reply out;
    out.status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    out.body = QJsonDocument::fromJson(reply->readAll()).object();
    reply->deleteLater();
    return out;
}

void TestRevokeEndToEnd::revokedKeyIsRefused()
{
    QTemporaryDir dir;
    ServerSettings settings = ServerSettings::defaults();
    settings.configPath = dir.filePath(QStringLiteral("config.json"));
    settings.authCacheMs = 10 * 60'000; // only the revocation announcement may end the cache
    Services services(settings,
                      DatabaseConfig::sqlite(dir.filePath(QStringLiteral("switchyard.db"))));
    services.start();
    // A /v1 route behind the real pipeline's API-key authentication, independent of which
    // model families and upstreams this build serves.
    services.host()->addRoutes([](Pipeline &pipeline) {
        RouteSpec probe;
        probe.method = "GET";
        probe.pattern = QStringLiteral("/v1/test/whoami");
        probe.family = QStringLiteral("test");
        probe.auth = AuthMode::ApiKey;
        probe.handler = [](const ContextPtr &ctx) {
            ctx->respondJson(200, QJsonObject{{"key_id", ctx->identity().keyId}});
        };
        pipeline.addRoute(probe);
    });
    QString error;
    QVERIFY2(services.listen(QHostAddress::LocalHost, 0, &error), qPrintable(error));
    ServerHost &host = *services.host();
    QUrl url = host.url();
    url.setPath(QStringLiteral("/v1/test/whoami"));

    MainWindow window(services);
    window.show();
    QVERIFY(window.showPanel(QStringLiteral("API Keys")));
    auto *panel = window.findChild<ApiKeysPanel *>();
    QVERIFY(panel);
    QCOMPARE(window.findChild<QLabel *>("listenLabel")->text(),
             QStringLiteral("Listening on ") + host.url().toString());
    QTRY_VERIFY(window.apiKeyModel()->isLoaded());

    // Create the key through the panel and read it from the one-time dialog.
    QTest::mouseClick(panel->findChild<QPushButton *>("createKeyButton"), Qt::LeftButton);
    auto *ask = panel->findChild<CreateApiKeyDialog *>();
    QVERIFY(ask);
    QTest::keyClicks(ask->findChild<QLineEdit *>("keyNameEdit"), "e2e");
    ask->findChild<QDialogButtonBox *>("buttons")->button(QDialogButtonBox::Ok)->click();
    QPointer<CreatedSecretDialog> shown;
    QTRY_VERIFY((shown = panel->findChild<CreatedSecretDialog *>()) && shown->isVisible());
    const QString key = shown->findChild<QLineEdit *>("secretField")->text();
    shown->accept();

    const Reply accepted = get(url, key);
    QCOMPARE(accepted.status, 200);
    QTRY_COMPARE(panel->view()->model()->rowCount(), 1);
    const qint64 keyId = panel->view()->model()->index(0, 0).data(ApiKeyModel::IdRole).toLongLong();
    QCOMPARE(accepted.body.value("key_id").toInteger(), keyId);
    QCOMPARE(get(url, QString()).status, 401);

    // Revoke through the panel, confirming.
    panel->view()->selectRow(0);
    QTest::mouseClick(panel->findChild<QPushButton *>("revokeKeyButton"), Qt::LeftButton);
    auto *box = panel->findChild<QMessageBox *>("revokeConfirmation");
    QVERIFY(box);
    QTest::mouseClick(box->findChild<QPushButton *>("confirmButton"), Qt::LeftButton);
    QTRY_COMPARE(panel->view()->model()->index(0, ApiKeyModel::StatusColumn).data().toString(),
                 QStringLiteral("Revoked"));

    Reply refused;
    QTRY_VERIFY_WITH_TIMEOUT((refused = get(url, key)).status == 401, 5000);
    QVERIFY(refused.body.value("error").toObject().value("message").toString().contains(
        QStringLiteral("revoked")));

    // The status bar counted the traffic: 1 accepted, at least 2 refused (4xx), no 5xx.
    auto *rate = window.findChild<QLabel *>("rateLabel");
    auto *errors = window.findChild<QLabel *>("errorsLabel");
    QTRY_VERIFY_WITH_TIMEOUT(rate->text().split(' ').value(0).toInt() >= 3, 3000);
    QVERIFY2(errors->text().contains(QStringLiteral("0 server (5xx)")), qPrintable(errors->text()));
    QVERIFY(!errors->text().contains(QStringLiteral(", 0 client")));

    services.stop();
}

QTEST_MAIN(TestRevokeEndToEnd)
#include "tst_revokeendtoend.moc"
