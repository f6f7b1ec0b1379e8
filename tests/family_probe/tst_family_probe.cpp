// The probe family (tests/family_probe) plugged into the program through the registries alone:
// its command through the command line's entry point, its route over HTTP on 127.0.0.1, its
// panel in the window's sidebar; its table migrated by each of them. On SQLite and PostgreSQL.
//
// Still to come: a usage meter of the probe family's own, registered the way families will
// register their meters once usage meters are data; this suite will then bill the route by it
// and read the meter back from the usage API and the Usage panel.
#include "Cli.h"
#include "HttpClient.h"
#include "MainWindow.h"
#include "ProbeFamily.h"
#include "ServerHost.h"
#include "Services.h"
#include "TestSupport.h"

#include <QJsonArray>
#include <QLabel>
#include <QListWidget>
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
        QVERIFY(r.out.contains(QStringLiteral("keys create|list|revoke")));
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
};

QTEST_MAIN(TestFamilyProbe)
#include "tst_family_probe.moc"
