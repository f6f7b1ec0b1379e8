// The probe family (tests/family_probe) plugged into the program through the registries alone:
// its command through the command line's entry point, its routes over HTTP on 127.0.0.1, its
// panel in the window's sidebar, its usage meter in the usage API and the window's Usage panel;
// its table migrated by each of them. On SQLite and PostgreSQL.
#include "Cli.h"
#include "HttpClient.h"
#include "JobQueue.h"
#include "MainWindow.h"
#include "ProbeFamily.h"
#include "ServerFixture.h"
#include "ServerHost.h"
#include "Services.h"
#include "TestSupport.h"
#include "UsageModel.h"
#include "UsagePanel.h"

#include <QHash>
#include <QJsonArray>
#include <QLabel>
#include <QListWidget>
#include <QMap>
#include <QTableView>
#include <QTest>
#include <QTextStream>

class TestFamilyProbe : public QObject
{
    Q_OBJECT

    // The build's families and the probe.
    static FamilyList withProbe()
    {
        FamilyList families = createFamilies();
        families.push_back(std::make_unique<ProbeFamily>());
        return families;
    }

    // The probe alone, after the build's families that the server fixture adds.
    static FamilyList probeOnly()
    {
        FamilyList families;
        families.push_back(std::make_unique<ProbeFamily>());
        return families;
    }

    struct Run
    {
        int code = -1;
        QString out;
        QString err;
    };

    static Run cli(const QStringList &args, FamilyList families = withProbe())
    {
        Run run;
        QTextStream out(&run.out);
        QTextStream err(&run.err);
        run.code = runCli(QStringList{QStringLiteral("switchyard-server")} + args,
                          std::move(families), out, err);
        out.flush();
        err.flush();
        return run;
    }

private slots:
    void commandIsDispatched()
    {
        Run r = cli({QStringLiteral("--help")});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains(QStringLiteral("  probe stamp|list")), qPrintable(r.out));
        QVERIFY(r.out.contains(QStringLiteral("stamp labels for the probe family")));
        QVERIFY(r.out.contains(QStringLiteral("keys create|update|list|revoke")));
        r = cli({QStringLiteral("probe"), QStringLiteral("stamp"), QStringLiteral("--help")});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains(QStringLiteral("--data-dir")) && r.out.contains("LABEL"));
        r = cli({QStringLiteral("probe"), QStringLiteral("frobnicate")});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(QStringLiteral("usage: switchyard-server probe stamp")),
                 qPrintable(r.err));
        r = cli({QStringLiteral("probe"), QStringLiteral("stamp"), QStringLiteral("--bogus")});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains(QStringLiteral("bogus")));
        // Without the family in the list, the command does not exist.
        r = cli({QStringLiteral("probe"), QStringLiteral("list")}, createFamilies());
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains(QStringLiteral("unknown command 'probe'")));
        QVERIFY(!r.err.contains(QStringLiteral("probe stamp")));
    }

    void commandRouteAndPanel_data() { addBackendRows(); }
    void commandRouteAndPanel()
    {
        SY_OPEN_DB(db);
        // The command writes the family's table, which the command line migrated.
        for (const char *label : {"beta", "alpha"}) {
            const Run r = cli(QStringList{QStringLiteral("probe"), QStringLiteral("stamp"),
                                          QString::fromLatin1(label)} +
                              db.cliArgs());
            QVERIFY2(r.code == 0, qPrintable(r.err));
            QCOMPARE(r.out, QString::fromLatin1(label) + u'\n');
        }
        Run r = cli(QStringList{QStringLiteral("probe"), QStringLiteral("stamp")} + db.cliArgs());
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains(QStringLiteral("expected exactly one label")));
        r = cli(QStringList{QStringLiteral("probe"), QStringLiteral("list")} + db.cliArgs());
        QCOMPARE(r.code, 0);
        QCOMPARE(r.out, QStringLiteral("alpha\nbeta\n"));

        // The route, served by the program's Services with the probe among its families.
        QTemporaryDir dir;
        ServerSettings settings = ServerSettings::defaults();
        settings.configPath = dir.filePath(QStringLiteral("config.json"));
        Services services(settings, db.config(), withProbe());
        services.start();
        QString error;
        QVERIFY2(services.listen(QHostAddress::LocalHost, 0, &error), qPrintable(error));
        HttpClient http(quint16(services.host()->url().port()));
        const HttpReply reply = http.get("/v1/probe/stamps");
        QCOMPARE(reply.status, 200);
        QCOMPARE(reply.json().value("object").toString(), QStringLiteral("probe.stamps"));
        QCOMPARE(reply.json().value("labels").toArray(),
                 (QJsonArray{QStringLiteral("alpha"), QStringLiteral("beta")}));
        // An unknown path under the family's prefix is the server's 404, as for any family.
        QCOMPARE(http.get("/v1/probe/nothing").status, 404);

        // The panel, under its group, from the probe's registration next to the build's.
        PanelRegistry panels = PanelRegistry::builtIn();
        addPanels_probe(panels);
        {
            MainWindow window(services, panels);
            auto *sidebar = window.findChild<QListWidget *>(QStringLiteral("sidebar"));
            QVERIFY(sidebar);
            const QList<QListWidgetItem *> rows =
                sidebar->findItems(QStringLiteral("Probe"), Qt::MatchContains);
            QCOMPARE(rows.size(), 1);
            QCOMPARE(rows.first()->toolTip(), QStringLiteral("Tools > Probe"));
            QVERIFY(window.showPanel(QStringLiteral("Probe")));
            QWidget *panel = window.currentPanel();
            QCOMPARE(panel->objectName(), QStringLiteral("probePanel"));
            auto *label = panel->findChild<QLabel *>(QStringLiteral("stampsLabel"));
            QVERIFY(label);
            QTRY_COMPARE(label->text(), QStringLiteral("alpha, beta"));
        }
        // Without its registration the window shows no probe panel, and the rest as before.
        {
            MainWindow window(services);
            QVERIFY(!window.showPanel(QStringLiteral("Probe")));
            QVERIFY(window.showPanel(QStringLiteral("API Keys")));
        }
        services.stop();
    }

    // The billed route under the probe's own meter: the charge exact, the meter read back by
    // its registered field from the usage API and under its registered label in the window's
    // Usage panel; refused without a key (401), with a bad body (400) and without enough credit
    // (402), none of them billed.
    void billedRouteAndMeter_data() { addBackendRows(); }
    void billedRouteAndMeter()
    {
        SY_START_SERVER(f, ServerSettings::defaults(), {}, probeOnly());
        constexpr qint64 price = ProbeFamily::kStampPrice;
        const qint64 account = f.store().defaultAccountId();
        qint64 keyId = 0;
        const QByteArray key = f.createKey(QStringLiteral("probe"), &keyId);
        f.grant(2 * price + price / 2); // two stamps, not three
        const qint64 granted = f.store().balance(account);
        QCOMPARE(granted, 2 * price + price / 2);
        const auto ledgerSize = [&] { return f.store().ledger(account, 100).size(); };
        const qsizetype entries = ledgerSize();
        HttpClient http = f.client();
        const QList<QPair<QByteArray, QByteArray>> auth{{"X-API-Key", key}};
        const auto stamp = [&](const QList<QPair<QByteArray, QByteArray>> &headers,
                               const QByteArray &body) {
            return http.request("POST", "/v1/probe/stamp", headers, body);
        };

        HttpReply r = stamp({}, R"({"labels": ["free"]})");
        QCOMPARE(r.status, 401);
        for (const QByteArray &bad :
             {QByteArray(R"({"labels": []})"), QByteArray(R"({"labels": ["a", ""]})"),
              QByteArray(R"({"labels": "a"})"),
              QByteArray(R"({"labels": [1, 2, 3, 4, 5, 6, 7, 8, 9]})")}) {
            r = stamp(auth, bad);
            QVERIFY2(r.status == 400, bad.constData());
            QCOMPARE(r.json().value("error").toObject().value("param").toString(),
                     QStringLiteral("labels"));
        }
        QCOMPARE(f.store().balance(account), granted);
        QCOMPARE(ledgerSize(), entries);

        // Three labels, then one: the price each time, exactly, charged before the answer left.
        r = stamp(auth, R"({"labels": ["alpha", "beta", "gamma"]})");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("object").toString(), QStringLiteral("probe.stamp"));
        QCOMPARE(r.json().value("stamps").toInteger(), 3);
        QCOMPARE(
            r.json().value("labels").toArray(),
            (QJsonArray{QStringLiteral("alpha"), QStringLiteral("beta"), QStringLiteral("gamma")}));
        const QString three = QString::fromLatin1(r.header("x-request-id"));
        QCOMPARE(f.store().balance(account), granted - price);
        const LedgerEntry charge = f.store().ledger(account, 1).first();
        QCOMPARE(charge.kind, QStringLiteral("charge"));
        QCOMPARE(charge.amount, -price);
        QCOMPARE(charge.requestId, three);
        r = stamp(auth, R"({"labels": ["delta"]})");
        QCOMPARE(r.status, 200);
        const QString one = QString::fromLatin1(r.header("x-request-id"));
        QCOMPARE(f.store().balance(account), granted - 2 * price);

        // Less than the price left: 402 before the handler runs, nothing charged.
        r = stamp(auth, R"({"labels": ["late"]})");
        QCOMPARE(r.status, 402);
        QCOMPARE(r.json().value("error").toObject().value("type").toString(),
                 QStringLiteral("insufficient_credits"));
        const QString refused = QString::fromLatin1(r.header("x-request-id"));
        QCOMPARE(f.store().balance(account), granted - 2 * price);
        QCOMPARE(ledgerSize(), entries + 2);

        // The usage API: every keyed request has its record (four 400s, two stamps, the 402),
        // the meter under its registered field, exact; 0 on the records that stamped nothing.
        UsageQuery keyed;
        keyed.accountId = account;
        keyed.keyId = keyId;
        QTRY_COMPARE(f.store().usage(keyed).records.size(), 7);
        const QByteArray token = f.createToken({QStringLiteral("usage:read")});
        r = http.get("/api/v1/usage?key=" + QByteArray::number(keyId), token);
        QCOMPARE(r.status, 200);
        const QJsonArray data = r.json().value("data").toArray();
        QCOMPARE(data.size(), 7);
        QHash<QString, QJsonObject> byRequest;
        for (const QJsonValue &v : data) {
            const QJsonObject rec = v.toObject();
            const QJsonObject units = rec.value("units").toObject();
            QVERIFY(units.contains("probe_stamp_count"));
            QVERIFY(!units.contains(ProbeFamily::kStampsMeter)); // the field, not the name
            byRequest.insert(rec.value("request_id").toString(), rec);
        }
        const auto stamps = [&](const QString &requestId) {
            return byRequest.value(requestId)
                .value("units")
                .toObject()
                .value("probe_stamp_count")
                .toInteger(-1);
        };
        QCOMPARE(stamps(three), 3);
        QCOMPARE(byRequest.value(three).value("cost_units").toString(), QString::number(price));
        QCOMPARE(stamps(one), 1);
        QCOMPARE(byRequest.value(one).value("cost_units").toString(), QString::number(price));
        QCOMPARE(stamps(refused), 0);
        QCOMPARE(byRequest.value(refused).value("status").toInt(), 402);
        QCOMPARE(byRequest.value(refused).value("cost_units").toString(), QStringLiteral("0"));
        for (const QJsonValue &v : data) {
            const QString id = v.toObject().value("request_id").toString();
            if (id != three && id != one) {
                QCOMPARE(stamps(id), 0);
                QCOMPARE(byRequest.value(id).value("cost_units").toString(), QStringLiteral("0"));
            }
        }

        // The window: the Usage panel has a column for the meter, headed by its label.
        MainWindow window(f.services());
        UsageModel *usage = window.usageModel();
        QTRY_VERIFY(usage->meterColumns().contains(ProbeFamily::kStampsMeter));
        const qsizetype meter = usage->meterColumns().indexOf(ProbeFamily::kStampsMeter);
        const int column = int(UsageModel::ColumnCount + meter);
        QVERIFY(window.showPanel(QStringLiteral("Usage")));
        auto *panel = qobject_cast<UsagePanel *>(window.currentPanel());
        QVERIFY(panel);
        const QAbstractItemModel *table = panel->view()->model();
        QCOMPARE(table->headerData(column, Qt::Horizontal).toString(), QStringLiteral("Stamps"));
        QVERIFY(!panel->view()->isColumnHidden(column));
        QHash<QString, QString> shown; // request id -> the meter's cell
        // The keyed requests' records, and the usage API's own (a control token's).
        QTRY_VERIFY(table->rowCount() >= 7);
        for (int row = 0; row < table->rowCount(); ++row)
            shown.insert(table->index(row, UsageModel::RequestIdColumn).data().toString(),
                         table->index(row, column).data().toString());
        QCOMPARE(shown.value(three), QStringLiteral("3"));
        QCOMPARE(shown.value(one), QStringLiteral("1"));
        QVERIFY(shown.contains(refused));
        QCOMPARE(shown.value(refused), QString());
    }

    // The family's executor through the host interface: with its one worker held and its queue
    // full, the next request is refused busy (503 engine_busy, Retry-After, unbilled); a client
    // that leaves while its job waits cancels it (the job never runs, 499, unbilled); the
    // others are served and charged once the worker is free.
    void executorBoundsAndCancels_data() { addBackendRows(); }
    void executorBoundsAndCancels()
    {
        SY_START_SERVER(f, ServerSettings::defaults(), {}, probeOnly());
        constexpr qint64 price = ProbeFamily::kStampPrice;
        const qint64 account = f.store().defaultAccountId();
        qint64 keyId = 0;
        const QByteArray key = f.createKey(QStringLiteral("work"), &keyId);
        f.grant(10 * price);
        const qint64 granted = f.store().balance(account);
        const QList<QPair<QByteArray, QByteArray>> auth{{"X-API-Key", key}};
        ProbeFamily::workRuns = 0;
        ProbeFamily::holdWork = true;
        struct Release // the worker is never left held, whatever fails
        {
            ~Release() { ProbeFamily::holdWork = false; }
        } release;

        HttpClient running = f.client(); // its job takes the worker and waits
        HttpClient leaving = f.client(); // its job waits in the queue, then it leaves
        running.send("POST", "/v1/probe/work", auth, "{}");
        QTRY_VERIFY(ProbeFamily::workQueue.load());
        JobQueue &queue = *ProbeFamily::workQueue.load();
        QTRY_COMPARE(queue.pending(), 1);
        leaving.send("POST", "/v1/probe/work", auth, "{}");
        QTRY_COMPARE(queue.pending(), 2);
        HttpClient refused = f.client();
        HttpReply r = refused.request("POST", "/v1/probe/work", auth, "{}");
        QCOMPARE(r.status, 503);
        QCOMPARE(r.json().value("error").toObject().value("code").toString(),
                 QStringLiteral("engine_busy"));
        QVERIFY(r.header("retry-after").toInt() >= 1);
        QVERIFY(r.json().value("error").toObject().value("message").toString().contains(
            QStringLiteral("The probe's workers are busy")));

        leaving.socket().abort();
        QTest::qWait(100); // the server sees it leave while the job still waits
        ProbeFamily::holdWork = false;
        r = running.readReply();
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("object").toString(), QStringLiteral("probe.work"));
        // The one served and a new one: two runs, two charges; the cancelled job never ran.
        r = refused.request("POST", "/v1/probe/work", auth, "{}");
        QCOMPARE(r.status, 200);
        QCOMPARE(ProbeFamily::workRuns.load(), 2);
        QCOMPARE(f.store().balance(account), granted - 2 * price);
        UsageQuery keyed;
        keyed.accountId = account;
        keyed.keyId = keyId;
        QTRY_COMPARE(f.store().usage(keyed).records.size(), 4);
        QMap<int, int> statuses;
        for (const UsageRecord &rec : f.store().usage(keyed).records) {
            ++statuses[rec.status];
            if (rec.status != 200)
                QCOMPARE(rec.cost, qint64(0));
        }
        QCOMPARE(statuses, (QMap<int, int>{{200, 2}, {499, 1}, {503, 1}}));
        QTRY_COMPARE(queue.pending(), 0);
    }
};

QTEST_MAIN(TestFamilyProbe)
#include "tst_family_probe.moc"
