#include "HttpClient.h"
#include "Money.h"
#include "Store.h"
#include "TestSupport.h"

#include <csignal>
#include <QProcess>
#include <QRegularExpression>
#include <QTest>

// The switchyard-server binary as scripts use it: admin commands and serve.
class TestCli : public QObject
{
    Q_OBJECT

    struct Run
    {
        int code = -1;
        QString out;
        QString err;
    };

    static Run run(const TestDatabase &db, QStringList args)
    {
        if (db.url().isEmpty())
            args << "--data-dir" << db.dataDir();
        else
            args << "--database" << db.url();
        return runRaw(args);
    }

    static Run runRaw(const QStringList &args)
    {
        QProcess p;
        p.start(QStringLiteral(SERVER_BINARY), args);
        p.waitForFinished(30'000);
        return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
                QString::fromUtf8(p.readAllStandardOutput()),
                QString::fromUtf8(p.readAllStandardError())};
    }

private slots:
    void helpAndUsageErrors()
    {
        Run r = runRaw({"--help"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("keys create|update|list|revoke"));
        // Families' commands are listed and dispatched like the built-in ones.
        QVERIFY(r.out.contains("address import|status"));
        r = runRaw({"address", "status", "--help"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("--data-dir"));
        r = runRaw({"address", "frobnicate"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("address import"));
        // Tokens may carry every family's scopes, and only known ones.
        r = runRaw({"tokens", "create", "--help"});
        QVERIFY(r.out.contains("providers:read") && r.out.contains("credits:read") &&
                r.out.contains("metrics:read"));
        r = runRaw({});
        QCOMPARE(r.code, 2);
        r = runRaw({"frobnicate"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("unknown command 'frobnicate'"));
        for (const QStringList &cmd : {QStringList{"serve"},
                                       {"keys", "create"},
                                       {"keys", "list"},
                                       {"keys", "revoke"},
                                       {"tokens", "create"},
                                       {"tokens", "list"},
                                       {"tokens", "revoke"},
                                       {"credits", "grant"},
                                       {"credits", "balance"}}) {
            r = runRaw(cmd + QStringList{"--help"});
            QVERIFY2(r.code == 0, qPrintable(cmd.join(' ')));
            QVERIFY2(r.out.contains("--data-dir"), qPrintable(cmd.join(' ')));
        }
        r = runRaw({"keys", "rotate"});
        QCOMPARE(r.code, 2);
        r = runRaw({"keys", "list", "--database", "mysql://nope"});
        QCOMPARE(r.code, 1);
        QVERIFY(r.err.contains("postgresql://"));
        r = runRaw({"keys", "list", "--bogus"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("bogus"));
    }

    void adminCommands_data() { addBackendRows(); }
    void adminCommands()
    {
        SY_OPEN_DB(db);
        Run r = run(db, {"keys", "create"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("--name is required"));

        r = run(db, {"keys", "create", "--name", "laptop"});
        QCOMPARE(r.code, 0);
        const QString key = r.out.trimmed();
        QVERIFY(QRegularExpression("^sk-[A-Za-z0-9_-]{43}$").match(key).hasMatch());
        QVERIFY(r.err.contains("shown only this once"));
        r = run(db, {"keys", "list"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("laptop"));
        QVERIFY(r.out.contains(key.left(9) + "..."));
        QVERIFY(!r.out.contains(key)); // never shown again
        QVERIFY(r.out.contains("active"));
        const QString id = r.out.split('\n').value(1).section('\t', 0, 0);
        QCOMPARE(run(db, {"keys", "revoke", id}).code, 0);
        QVERIFY(run(db, {"keys", "list"}).out.contains("revoked"));
        r = run(db, {"keys", "revoke", id});
        QCOMPARE(r.code, 1);
        QVERIFY(r.err.contains("no active API key"));
        QCOMPARE(run(db, {"keys", "revoke", "abc"}).code, 2);
        QCOMPARE(run(db, {"keys", "revoke"}).code, 2);

        r = run(db, {"tokens", "create", "--scopes", "credits:read,nope:write"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("unknown scope 'nope:write'"));
        QCOMPARE(run(db, {"tokens", "create"}).code, 2);
        QCOMPARE(run(db, {"tokens", "create", "--scopes", "credits:read", "--expires", "0"}).code,
                 2);
        r = run(db, {"tokens", "create", "--scopes", "credits:read,usage:read", "--expires", "30"});
        QCOMPARE(r.code, 0);
        const QString token = r.out.trimmed();
        QVERIFY(token.startsWith("lpc_"));
        // A family's scope (the gateway's) is as good as the core's.
        QCOMPARE(run(db, {"tokens", "create", "--scopes", "providers:read"}).code, 0);
        r = run(db, {"tokens", "list"});
        QVERIFY(r.out.contains("credits:read,usage:read"));
        QVERIFY(r.out.contains("providers:read"));
        QVERIFY(!r.out.contains(token));
        const QString tokenId = r.out.split('\n').value(1).section('\t', 0, 0);
        QCOMPARE(run(db, {"tokens", "revoke", tokenId}).code, 0);
        QVERIFY(run(db, {"tokens", "list"}).out.contains("revoked"));

        for (const char *bad : {"-1", "0", "abc", "1.0000000001", "1e3"}) {
            r = run(db, {"credits", "grant", "--amount", bad});
            QVERIFY2(r.code == 2, bad);
        }
        r = run(db, {"credits", "grant", "--amount", "1.5", "--note", "welcome"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("balance 1.500000000"));
        QCOMPARE(run(db, {"credits", "grant", "--amount", "3000000000"}).code, 0);
        QCOMPARE(run(db, {"credits", "balance"}).out.trimmed(),
                 QStringLiteral("3000000001.500000000"));
    }

    // keys create and update with rules: stored as the API would store them, shown by list;
    // a bad value is a usage error (2) naming the option, and changes nothing.
    void keyRules_data() { addBackendRows(); }
    void keyRules()
    {
        SY_OPEN_DB(db);
        Run r = run(db, {"keys", "create", "--name", "ci", "--budget", "5/day", "--models",
                         "vendorB-*,gpt-image-1", "--allow-ip", "10.0.0.0/8", "--allow-ip", "::1",
                         "--expires", "2027-01-31"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        r = run(db, {"keys", "list"});
        const QString row = r.out.split('\n').value(1);
        const QString id = row.section('\t', 0, 0);
        QVERIFY2(row.contains("budget 5.000000000/day; models vendorB-*,gpt-image-1; from "
                              "10.0.0.0/8,::1; expires 2027-01-31T00:00:00Z"),
                 qPrintable(row));
        // The CLI migrated the database; a connection of the test's own reads what it wrote.
        Store store(db.config().open(QStringLiteral("cli-check")), db.config().kind());
        KeyRules rules = store.apiKey(store.defaultAccountId(), id.toLongLong())->rules;
        QCOMPARE(rules.budget->amount, 5 * Money::kUnitsPerCredit);
        QCOMPARE(rules.models, (QStringList{"vendorB-*", "gpt-image-1"}));

        // update: the options given change, "none"/"never" remove, the rest stays.
        r = run(db, {"keys", "update", id, "--budget", "20/week", "--models", "none", "--tier",
                     "default", "--name", "renamed"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const ApiKeyRecord key = *store.apiKey(store.defaultAccountId(), id.toLongLong());
        QCOMPARE(key.name, QStringLiteral("renamed"));
        QCOMPARE(key.rules.budget->period, KeyRules::Period::Week);
        QVERIFY(key.rules.models.isEmpty());
        QCOMPARE(key.rules.allowedIps, (QStringList{"10.0.0.0/8", "::1"}));
        QCOMPARE(run(db, {"keys", "update", id, "--allow-ip", "none", "--expires", "never",
                          "--budget", "none"})
                     .code,
                 0);
        QVERIFY(store.apiKey(store.defaultAccountId(), id.toLongLong())->rules.isEmpty());
        r = run(db, {"keys", "update", id, "--expires", "30d"});
        QCOMPARE(r.code, 0);
        const QDateTime expires =
            store.apiKey(store.defaultAccountId(), id.toLongLong())->rules.expires;
        QVERIFY(qAbs(expires.secsTo(QDateTime::currentDateTimeUtc().addDays(30))) < 120);

        const QList<QPair<QStringList, const char *>> bad{
            {{"--budget", "5/year"}, "--budget"}, {{"--budget", "-1/day"}, "--budget"},
            {{"--models", "a b"}, "--models"},    {{"--allow-ip", "10.0.0.0/40"}, "--allow-ip"},
            {{"--expires", "soon"}, "--expires"}, {{"--name", " "}, "--name"},
        };
        for (const auto &[options, option] : bad) {
            r = run(db, QStringList{"keys", "update", id} + options);
            QVERIFY2(r.code == 2, option);
            QVERIFY2(r.err.contains(QLatin1String(option)), qPrintable(r.err));
            r = run(db, QStringList{"keys", "create", "--name", "x"} + options);
            if (QLatin1String(option) != QLatin1String("--name"))
                QVERIFY2(r.code == 2, option);
        }
        QCOMPARE(store.apiKey(store.defaultAccountId(), id.toLongLong())->rules.expires, expires);
        r = run(db, {"keys", "update", "999999", "--models", "a"});
        QCOMPARE(r.code, 1);
        QVERIFY(r.err.contains("no API key with id 999999"));
    }

    void serveAndStop_data() { addBackendRows(); }
    void serveAndStop()
    {
        SY_OPEN_DB(db);
        QStringList args{"serve", "--listen", "127.0.0.1:0"};
        if (db.url().isEmpty())
            args << "--data-dir" << db.dataDir();
        else
            args << "--database" << db.url();
        QProcess server;
        server.start(QStringLiteral(SERVER_BINARY), args);
        QVERIFY(server.waitForStarted());
        QString banner;
        const QRegularExpression listening("listening on http://127\\.0\\.0\\.1:(\\d+)");
        QRegularExpressionMatch m;
        QElapsedTimer t;
        t.start();
        while (!(m = listening.match(banner)).hasMatch() && t.elapsed() < 10'000) {
            server.waitForReadyRead(200);
            banner += QString::fromUtf8(server.readAllStandardError());
        }
        QVERIFY2(m.hasMatch(), qPrintable(banner));
        // A first-time user is told how to get a key and credits.
        while (!banner.contains("credits grant") && t.elapsed() < 10'000) {
            server.waitForReadyRead(200);
            banner += QString::fromUtf8(server.readAllStandardError());
        }
        QVERIFY2(banner.contains("keys create --name") && banner.contains("credits grant"),
                 qPrintable(banner));
        const quint16 port = quint16(m.captured(1).toUInt());

        // Credentials made by the admin command work on the running server.
        const QString token =
            run(db, {"tokens", "create", "--scopes", "credits:read"}).out.trimmed();
        QCOMPARE(run(db, {"credits", "grant", "--amount", "2"}).code, 0);
        HttpClient c(port);
        const HttpReply r = c.get("/api/v1/credits/balance", token.toLatin1());
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("balance").toString(), QStringLiteral("2.000000000"));

        // The same port cannot be taken twice: a clear error and a non-zero exit.
        Run busy = runRaw({"serve", "--listen", QStringLiteral("127.0.0.1:%1").arg(port),
                           "--data-dir", db.dataDir()});
        QCOMPARE(busy.code, 1);
        QVERIFY(busy.err.contains("cannot listen"));

        ::kill(pid_t(server.processId()), SIGTERM);
        QVERIFY(server.waitForFinished(10'000));
        QCOMPARE(server.exitStatus(), QProcess::NormalExit);
        QCOMPARE(server.exitCode(), 0);
        QVERIFY(QString::fromUtf8(server.readAllStandardError()).contains("Stopped."));
        QTcpSocket s;
        s.connectToHost(QHostAddress::LocalHost, port);
        QVERIFY(!s.waitForConnected(500));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
