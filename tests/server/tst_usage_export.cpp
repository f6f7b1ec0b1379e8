// Exports and summaries (models/CsvExport.h, server/control): CSV quoting and exact numbers,
// GET /api/v1/usage?format=csv and /api/v1/credits/ledger?format=csv over more rows than a page
// with their filters, GET /api/v1/usage/summary by key, model and day, and `switchyard-server
// usage export --csv`. On SQLite and PostgreSQL.
#include "Cli.h"
#include "CsvExport.h"
#include "Money.h"
#include "ServerFixture.h"
#include "TestSupport.h"

#include <QJsonArray>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>
#include <QTextStream>

namespace {

// The records of a CSV body without its header, split on CRLF (the rows here have no quoted
// line breaks).
QList<QByteArray> lines(const QByteArray &csv)
{
    QList<QByteArray> out = csv.split('\n');
    for (QByteArray &l : out)
        if (l.endsWith('\r'))
            l.chop(1);
    if (!out.isEmpty() && out.last().isEmpty())
        out.removeLast();
    return out;
}

QDateTime at(const char *iso)
{
    return QDateTime::fromString(QString::fromLatin1(iso), Qt::ISODate).toUTC();
}

} // namespace

class TestUsageExport : public QObject
{
    Q_OBJECT

private slots:
    void quotingAndNumbers()
    {
        QCOMPARE(CsvExport::row({"a", "b c", ""}), QByteArray("a,b c,\r\n"));
        QCOMPARE(CsvExport::row({"x,y", "say \"hi\"", "two\nlines", "cr\r"}),
                 QByteArray("\"x,y\",\"say \"\"hi\"\"\",\"two\nlines\",\"cr\r\"\r\n"));
        QCOMPARE(CsvExport::row({QStringLiteral("北京市, 朝阳区")}),
                 QStringLiteral("\"北京市, 朝阳区\"\r\n").toUtf8());
        QCOMPARE(CsvExport::scaled(1500, 1000), QStringLiteral("1.5"));
        QCOMPARE(CsvExport::scaled(1, 1000), QStringLiteral("0.001"));
        QCOMPARE(CsvExport::scaled(3000, 1000), QStringLiteral("3"));
        QCOMPARE(CsvExport::scaled(-1, 1000), QStringLiteral("-0.001"));
        QCOMPARE(CsvExport::scaled(std::numeric_limits<qint64>::max(), 1000),
                 QStringLiteral("9223372036854775.807"));
        QCOMPARE(CsvExport::scaled(42, 1), QStringLiteral("42"));

        UsageRecord u;
        u.id = 7;
        u.time = at("2026-12-02T10:00:00Z");
        u.keyId = 3;
        u.endpoint = QStringLiteral("/v1/audio/speech");
        u.model = QStringLiteral("m,1");
        u.cost = 1'000'000'001;
        u.status = 200;
        u.setMeter(QStringLiteral("audio_ms"), 2500);
        const QList<MeterSpec> meters{{QStringLiteral("audio_ms"), QStringLiteral("Audio"),
                                       QStringLiteral("audio_seconds"), 1000}};
        QCOMPARE(CsvExport::usageHeader(meters),
                 QByteArray("id,time,api_key_id,endpoint,model,input_tokens,output_tokens,"
                            "cache_read_tokens,cache_write_tokens,requests,audio_seconds,cost,"
                            "cost_units,status,latency_ms,request_id,estimated\r\n"));
        QCOMPARE(CsvExport::usageRow(u, meters),
                 QByteArray("7,2026-12-02T10:00:00.000Z,3,/v1/audio/speech,\"m,1\",0,0,0,0,1,2.5,"
                            "1.000000001,1000000001,200,0,,false\r\n"));
    }

    // More rows than a page: every one, newest first, exactly once; the filters apply; the
    // ledger's free text survives quoting.
    void csvOverHttp_data() { addBackendRows(); }
    void csvOverHttp()
    {
        SY_START_SERVER(f);
        const qint64 account = f.store().defaultAccountId();
        qint64 keyA = 0, keyB = 0;
        f.createKey(QStringLiteral("a"), &keyA);
        f.createKey(QStringLiteral("b"), &keyB);
        constexpr int kRows = 2'345; // three pages
        f.store().transaction([&] {
            for (int i = 0; i < kRows; ++i) {
                UsageRecord u;
                u.accountId = account;
                u.keyId = i % 3 ? keyA : keyB;
                u.time = at("2026-11-30T00:00:00Z").addSecs(i * 60);
                u.endpoint = QStringLiteral("/v1/test");
                u.model = i % 2 ? QStringLiteral("odd") : QStringLiteral("even");
                u.inputTokens = i;
                u.cost = 1000 + i;
                u.status = 200;
                u.requestId = QStringLiteral("req_%1").arg(i);
                if (i % 5 == 0)
                    u.setMeter(QStringLiteral("characters"), i);
                f.store().insertUsage(u);
            }
        });
        f.store().applyLedger(account, "grant", 5 * Money::kUnitsPerCredit,
                              QStringLiteral("note, with \"quotes\""), "", 0);
        const QByteArray token = f.createToken({"usage:read", "credits:read"});
        HttpClient c = f.client();

        HttpReply r = c.get("/api/v1/usage?format=csv", token);
        QCOMPARE(r.status, 200);
        QVERIFY(r.header("content-type").startsWith("text/csv"));
        QVERIFY(r.header("content-disposition").contains("usage.csv"));
        QList<QByteArray> rows = lines(r.body);
        QCOMPARE(rows.size(), kRows + 1);
        const QList<QByteArray> header = rows.first().split(',');
        const qsizetype costAt = header.indexOf("cost_units");
        const qsizetype charsAt = header.indexOf("characters");
        QVERIFY(costAt > 0 && charsAt > 0);
        qint64 total = 0;
        QSet<QByteArray> ids;
        for (int i = 1; i < rows.size(); ++i) {
            const QList<QByteArray> cols = rows[i].split(',');
            QCOMPARE(cols.size(), header.size());
            total += cols[costAt].toLongLong();
            ids.insert(cols[0]);
        }
        QCOMPARE(ids.size(), kRows);
        QCOMPARE(total, qint64(kRows) * 1000 + qint64(kRows) * (kRows - 1) / 2);
        // Newest first: the last inserted leads, with its meter.
        QVERIFY(rows[1].contains(QByteArrayLiteral("req_2344")));
        QVERIFY(rows[5].contains(QByteArrayLiteral("req_2340")));
        QCOMPARE(rows[5].split(',')[charsAt], QByteArray("2340"));
        QCOMPARE(rows[4].split(',')[charsAt], QByteArray("0")); // a meter a record lacks
        // Filters: a key, a model and a time window.
        r = c.get("/api/v1/usage?format=csv&key=" + QByteArray::number(keyB) +
                      "&model=even&from=2026-11-30T10:00:00Z&to=2026-11-30T20:00:00Z",
                  token);
        rows = lines(r.body);
        int expected = 0;
        for (int i = 600; i < 1200; ++i)
            expected += (i % 3 == 0 && i % 2 == 0);
        QCOMPARE(rows.size(), expected + 1);
        QCOMPARE(c.get("/api/v1/usage?format=xml", token).status, 400);
        QCOMPARE(c.get("/api/v1/usage?format=csv&from=yesterday", token).status, 400);
        QCOMPARE(c.get("/api/v1/usage?format=csv", f.createToken({"credits:read"})).status, 403);

        r = c.get("/api/v1/credits/ledger?format=csv", token);
        QCOMPARE(r.status, 200);
        rows = lines(r.body);
        QCOMPARE(rows.first(), QByteArray("id,created_at,kind,amount,amount_units,balance_after,"
                                          "balance_after_units,reason,request_id"));
        QCOMPARE(rows.size(), 2);
        QVERIFY(rows[1].contains(",grant,5.000000000,5000000000,"));
        QVERIFY(rows[1].contains(",\"note, with \"\"quotes\"\"\","));
        r = c.get("/api/v1/credits/ledger?format=csv&to=2000-01-01T00:00:00Z", token);
        QCOMPARE(lines(r.body).size(), 1); // the header alone
    }

    void summary_data() { addBackendRows(); }
    void summary()
    {
        SY_START_SERVER(f);
        const qint64 account = f.store().defaultAccountId();
        qint64 keyA = 0, keyB = 0;
        f.createKey(QStringLiteral("a"), &keyA);
        f.createKey(QStringLiteral("b"), &keyB);
        const auto add = [&](qint64 key, const char *model, const char *when, qint64 cost,
                             qint64 chars) {
            UsageRecord u;
            u.accountId = account;
            u.keyId = key;
            u.time = at(when);
            u.endpoint = QStringLiteral("/v1/test");
            u.model = QString::fromLatin1(model);
            u.inputTokens = 10;
            u.outputTokens = 1;
            u.cost = cost;
            u.status = 200;
            u.setMeter(QStringLiteral("characters"), chars);
            f.store().insertUsage(u);
        };
        add(keyA, "m1", "2026-12-01T23:59:59Z", 100, 5);
        add(keyA, "m2", "2026-12-02T00:00:00Z", 200, 0);
        add(keyB, "m1", "2026-12-02T12:00:00Z", 300, 7);
        const QByteArray token = f.createToken({"usage:read"});
        HttpClient c = f.client();
        const auto groups = [&](const QByteArray &query) {
            const HttpReply r = c.get("/api/v1/usage/summary?" + query, token);
            QHash<QString, QJsonObject> out;
            for (const QJsonValue &v : r.json().value("data").toArray())
                out.insert(v.toObject().value("group").toString(), v.toObject());
            return out;
        };
        auto g = groups("group_by=model");
        QCOMPARE(g.size(), 2);
        QCOMPARE(g["m1"].value("requests").toInt(), 2);
        QCOMPARE(g["m1"].value("cost_units").toString(), QStringLiteral("400"));
        QCOMPARE(g["m1"].value("units").toObject().value("input_tokens").toInt(), 20);
        QCOMPARE(g["m1"].value("units").toObject().value("characters").toInt(), 12);
        QCOMPARE(g["m2"].value("units").toObject().value("characters").toInt(), 0);
        g = groups("group_by=key");
        QCOMPARE(g[QString::number(keyA)].value("cost").toString(), QStringLiteral("0.000000300"));
        QCOMPARE(g[QString::number(keyB)].value("requests").toInt(), 1);
        g = groups("group_by=day");
        QCOMPARE(g.keys().size(), 2);
        QCOMPARE(g["2026-12-01"].value("cost_units").toString(), QStringLiteral("100"));
        QCOMPARE(g["2026-12-02"].value("cost_units").toString(), QStringLiteral("500"));
        g = groups("group_by=day&from=2026-12-02T00:00:00Z&model=m1");
        QCOMPARE(g.size(), 1);
        QCOMPARE(g["2026-12-02"].value("cost_units").toString(), QStringLiteral("300"));
        QCOMPARE(c.get("/api/v1/usage/summary", token).status, 400);
        QCOMPARE(c.get("/api/v1/usage/summary?group_by=week", token).status, 400);
    }

    // The command line writes the same CSV the API streams.
    void commandLine_data() { addBackendRows(); }
    void commandLine()
    {
        SY_START_SERVER(f);
        const qint64 account = f.store().defaultAccountId();
        for (int i = 0; i < 1'500; ++i) {
            UsageRecord u;
            u.accountId = account;
            u.time = at("2026-12-02T00:00:00Z").addSecs(i);
            u.endpoint = QStringLiteral("/v1/test");
            u.cost = i;
            u.status = 200;
            f.store().insertUsage(u);
        }
        const QByteArray api =
            f.client().get("/api/v1/usage?format=csv", f.createToken({"usage:read"})).body;
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("usage.csv"));
        QString out, err;
        QTextStream o(&out), e(&err);
        const QStringList database = f.testDatabase().cliArgs();
        int code =
            runCli(QStringList{"switchyard-server", "usage", "export", "--csv", file} + database,
                   createFamilies(), o, e);
        e.flush();
        QVERIFY2(code == 0, qPrintable(err));
        QVERIFY(err.contains(QStringLiteral("Exported 1500 usage records")));
        QFile written(file);
        QVERIFY(written.open(QIODevice::ReadOnly));
        QCOMPARE(written.readAll(), api);
        code = runCli(QStringList{"switchyard-server", "usage", "export"} + database,
                      createFamilies(), o, e);
        QCOMPARE(code, 2);
        code = runCli(
            QStringList{"switchyard-server", "usage", "export", "--csv", file, "--from", "soon"} +
                database,
            createFamilies(), o, e);
        QCOMPARE(code, 2);
    }
};

QTEST_MAIN(TestUsageExport)
#include "tst_usage_export.moc"
