// The address routes over HTTP: request shapes, errors in the envelope, billing per request.

#include "address/AddressFamily.h"
#include "AddressData.h"
#include "AddressEngine.h"
#include "CoordTransform.h"
#include "Money.h"
#include "ServerFixture.h"

#include <memory>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

namespace {

AddressFamily &addressFamily(ServerFixture &f)
{
    AddressFamily *family = f.services().family<AddressFamily>();
    if (!family)
        qFatal("this build has no address family");
    return *family;
}

// The price the family bills per answer (its default: no address section in these settings).
qint64 price(ServerFixture &f)
{
    return addressFamily(f).pricePerRequest();
}

// An import as the window does it (AddressFamily::importCsv), its report awaited.
AddressStore::ImportReport importNow(ServerFixture &f, AddressStore::Kind kind, const QString &path)
{
    QObject context;
    AddressImportJob *job = addressFamily(f).importCsv(kind, path, false, &context);
    QSignalSpy done(job, &AddressImportJob::finished);
    if (!done.wait(60000))
        qFatal("the import did not finish");
    return done.first().first().value<AddressStore::ImportReport>();
}

QJsonObject ask(ServerFixture &f, const QByteArray &key, const char *endpoint, const QString &text)
{
    const HttpReply r = f.client().postJson(
        QByteArray("/v1/address/") + endpoint,
        QJsonDocument(QJsonObject{{"text", text}}).toJson(QJsonDocument::Compact), key);
    if (r.status != 200)
        qWarning("%s: %d %s", endpoint, r.status, r.body.constData());
    return r.json();
}

} // namespace

class TestAddressHttp : public QObject
{
    Q_OBJECT
private slots:
    void transferCoordAllSystems_data() { addBackendRows(); }
    void transferCoordAllSystems()
    {
        SY_START_SERVER(f);
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        HttpReply r =
            f.client().postJson("/v1/address/transfer-coord",
                                "{\"text\":\"116.397428,39.90923\",\"srcCoord\":\"gcj02\"}", key);
        QCOMPARE(r.status, 200);
        const QJsonObject out = r.json().value("coord_transfer").toObject();
        QCOMPARE(out.keys(), (QStringList{"BD09", "CGCS2000", "GCJ02", "WGS84"}));
        QCOMPARE(out.value("GCJ02").toString(), QStringLiteral("116.397428,39.909230"));
        QCOMPARE(out.value("WGS84").toString(), out.value("CGCS2000").toString());
        // The WGS84 answer maps back onto the input.
        const auto wgs = CoordTransform::parseCoordinate(out.value("WGS84").toString());
        QVERIFY(wgs.ok);
        const auto back = CoordTransform::wgs84ToGcj02(wgs.value);
        QVERIFY(qAbs(back.lon - 116.397428) < 2e-6 && qAbs(back.lat - 39.90923) < 2e-6);
        // Billed at the address price.
        QCOMPARE(f.store().balance(f.store().defaultAccountId()),
                 Money::kUnitsPerCredit - price(f));
    }

    void transferCoordOneSystem()
    {
        ServerFixture f(QStringLiteral("sqlite"));
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        HttpReply r = f.client().postJson(
            "/v1/address/transfer-coord",
            "{\"text\":\"121.4737, 31.2304\",\"srcCoord\":\"WGS84\",\"dstCoord\":\"bd09\"}", key);
        QCOMPARE(r.status, 200);
        const QJsonObject out = r.json().value("coord_transfer").toObject();
        QCOMPARE(out.keys(), QStringList{"BD09"});
        const QString expected = CoordTransform::formatCoordinate(CoordTransform::convert(
            {121.4737, 31.2304}, CoordTransform::System::Wgs84, CoordTransform::System::Bd09));
        QCOMPARE(out.value("BD09").toString(), expected);
    }

    void transferCoordErrors_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("param");
        QTest::addColumn<QString>("messageStart"); // what a client reads first
        QTest::newRow("no text") << QByteArray("{\"srcCoord\":\"wgs84\"}") << "text"
                                 << "text:";
        QTest::newRow("text not string")
            << QByteArray("{\"text\":1,\"srcCoord\":\"wgs84\"}") << "text"
            << "text:";
        QTest::newRow("one number")
            << QByteArray("{\"text\":\"116.3\",\"srcCoord\":\"wgs84\"}") << "text"
            << "text:";
        QTest::newRow("letters") << QByteArray("{\"text\":\"abc,def\",\"srcCoord\":\"wgs84\"}")
                                 << "text"
                                 << "text:";
        QTest::newRow("out of range")
            << QByteArray("{\"text\":\"200,10\",\"srcCoord\":\"wgs84\"}") << "text"
            << "text:";
        QTest::newRow("empty") << QByteArray("{\"text\":\"\",\"srcCoord\":\"wgs84\"}") << "text"
                               << "text:";
        QTest::newRow("no src") << QByteArray("{\"text\":\"116,39\"}") << "srcCoord"
                                << "srcCoord:";
        QTest::newRow("unknown src")
            << QByteArray("{\"text\":\"116,39\",\"srcCoord\":\"utm\"}") << "srcCoord"
            << "srcCoord:";
        QTest::newRow("unknown dst")
            << QByteArray("{\"text\":\"116,39\",\"srcCoord\":\"wgs84\",\"dstCoord\":\"mars\"}")
            << "dstCoord"
            << "dstCoord:";
        QTest::newRow("bad inverse")
            << QByteArray("{\"text\":\"116,39\",\"srcCoord\":\"gcj02\",\"inverse\":\"x\"}")
            << "inverse"
            << "inverse:";
        // The body itself: the sentences every family's JSON routes give, made on the worker.
        QTest::newRow("not json") << QByteArray("{text:") << ""
                                  << "Malformed JSON body at byte ";
        QTest::newRow("no body") << QByteArray() << ""
                                 << "The request body is empty; expected a JSON object.";
        QTest::newRow("blank body") << QByteArray(" \r\n ") << ""
                                    << "The request body is empty; expected a JSON object.";
        QTest::newRow("an array") << QByteArray("[{\"text\":\"116,39\"}]") << ""
                                  << "The request body must be a JSON object.";
    }
    void transferCoordErrors()
    {
        QFETCH(QByteArray, body);
        QFETCH(QString, param);
        QFETCH(QString, messageStart);
        ServerFixture f(QStringLiteral("sqlite"));
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        HttpReply r = f.client().postJson("/v1/address/transfer-coord", body, key);
        QCOMPARE(r.status, 400);
        const QJsonObject error = r.json().value("error").toObject();
        QCOMPARE(error.value("type").toString(), QStringLiteral("invalid_request_error"));
        if (!param.isEmpty())
            QCOMPARE(error.value("param").toString(), param);
        const QString message = error.value("message").toString();
        QVERIFY2(message.startsWith(messageStart), qPrintable(message));
        QCOMPARE(f.store().balance(f.store().defaultAccountId()), Money::kUnitsPerCredit);
    }

    void extractPhone()
    {
        ServerFixture f(QStringLiteral("sqlite"));
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        const QString text = QStringLiteral("张三 138 1234 5678，座机0571-88886666转12，杭州市");
        HttpReply r = f.client().postJson(
            "/v1/address/extract-phone",
            QJsonDocument(QJsonObject{{"text", text}}).toJson(QJsonDocument::Compact), key);
        QCOMPARE(r.status, 200);
        const QJsonArray found = r.json().value("phone_extract").toArray();
        QCOMPARE(found.size(), 2);
        for (const QJsonValue &v : found) {
            const QJsonObject m = v.toObject();
            const int start = m.value("start").toInt();
            const int end = m.value("end").toInt();
            QCOMPARE(text.mid(start, end - start), m.value("word").toString());
        }
        QCOMPARE(found.at(0).toObject().value("word").toString(), QStringLiteral("138 1234 5678"));
        // Text bounds.
        for (const QByteArray &bad :
             {QByteArray("{\"text\":\"  \"}"), QByteArray("{}"), QByteArray("{\"text\":[]}"),
              "{\"text\":\"" + QByteArray(2001, 'x') + "\"}"}) {
            HttpReply e = f.client().postJson("/v1/address/extract-phone", bad, key);
            QCOMPARE(e.status, 400);
            QCOMPARE(e.json().value("error").toObject().value("param").toString(),
                     QStringLiteral("text"));
        }
    }

    void divisionCode()
    {
        ServerFixture f(QStringLiteral("sqlite"));
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        auto ask = [&](const QString &text) {
            return f.client()
                .postJson("/v1/address/division-code",
                          QJsonDocument(QJsonObject{{"text", text}}).toJson(QJsonDocument::Compact),
                          key)
                .json();
        };
        QJsonObject r = ask(QStringLiteral("浙江省杭州市余杭区五常街道文一西路969号"));
        QJsonObject info = r.value("division_info").toObject();
        QCOMPARE(r.value("status").toString(), QStringLiteral("OK"));
        QCOMPARE(info.value("division_province").toString(), QStringLiteral("浙江省"));
        QCOMPARE(info.value("division_city").toString(), QStringLiteral("杭州市"));
        QCOMPARE(info.value("division_district").toString(), QStringLiteral("余杭区"));
        QCOMPARE(info.value("division_street").toString(), QStringLiteral("五常街道"));
        QCOMPARE(info.value("divcode").toString().size(), 12);
        QVERIFY(info.value("divcode").toString().startsWith(QStringLiteral("330110")));
        // A district alone fills in its province and city.
        info = ask(QStringLiteral("余杭区良渚街道")).value("division_info").toObject();
        QCOMPARE(info.value("division_province").toString(), QStringLiteral("浙江省"));
        // No division: said so, nothing invented.
        r = ask(QStringLiteral("hello world"));
        QCOMPARE(r.value("status").toString(), QStringLiteral("NOT_FOUND"));
        QCOMPARE(r.value("division_info").toObject().value("divcode").toString(), QString());
    }

    void geocode()
    {
        ServerFixture f(QStringLiteral("sqlite"));
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        auto ask = [&](const QString &text) {
            return f.client()
                .postJson("/v1/address/geocode",
                          QJsonDocument(QJsonObject{{"text", text}}).toJson(QJsonDocument::Compact),
                          key)
                .json();
        };
        // 东城区's centre in the data is 116.418757,39.917544 (GCJ-02).
        QJsonObject r = ask(QStringLiteral("北京市东城区东华门街道"));
        QJsonObject g = r.value("offline_geocode").toObject();
        QCOMPARE(r.value("status").toString(), QStringLiteral("OK"));
        QCOMPARE(g.value("gcj02").toString(), QStringLiteral("116.418757,39.917544"));
        QCOMPARE(g.value("level").toString(), QStringLiteral("district")); // towns: not yet
        const auto wgs = CoordTransform::parseCoordinate(g.value("wgs84").toString());
        QVERIFY(wgs.ok);
        const auto back = CoordTransform::wgs84ToGcj02(wgs.value);
        QVERIFY(qAbs(back.lon - 116.418757) < 2e-6 && qAbs(back.lat - 39.917544) < 2e-6);
        r = ask(QStringLiteral("no address here"));
        QCOMPARE(r.value("status").toString(), QStringLiteral("NOT_FOUND"));
        QCOMPARE(r.value("offline_geocode").toObject().value("wgs84").toString(), QString());
    }

    // zipcode, geocode and hp-geocode before and after an import, billing, and the data loaded
    // when a server starts over a database that has it.
    void importedData_data() { addBackendRows(); }
    void importedData()
    {
        SY_START_SERVER(f);
        AddressFamily &family = addressFamily(f);
        QVERIFY(family.waitForLoad(30000)); // the start-up load installed (no) data
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        const qint64 price = ::price(f);
        const auto balance = [&] { return f.store().balance(f.store().defaultAccountId()); };
        const auto ask = [&](const char *endpoint, const QString &text, quint16 port = 0) {
            const HttpReply r =
                HttpClient(port ? port : f.port())
                    .postJson(
                        QByteArray("/v1/address/") + endpoint,
                        QJsonDocument(QJsonObject{{"text", text}}).toJson(QJsonDocument::Compact),
                        key);
            if (r.status != 200)
                qWarning("%s: %d %s", endpoint, r.status, r.body.constData());
            return r.json();
        };
        const QString address =
            QStringLiteral("浙江省杭州市余杭区五常街道文一西路100号西溪科创大厦");

        // No data: said so, not billed.
        QJsonObject r = ask("zipcode", address);
        QCOMPARE(r.value("status").toString(), QStringLiteral("NO_DATA"));
        QCOMPARE(r.value("zipcode").toString(), QString());
        QVERIFY(r.value("message").toString().startsWith(QStringLiteral(
            "no zip code is imported for 浙江省杭州市余杭区五常街道; import a CSV")));
        r = ask("zipcode", QStringLiteral("no address"));
        QCOMPARE(r.value("status").toString(), QStringLiteral("NOT_FOUND"));
        QCOMPARE(balance(), Money::kUnitsPerCredit);
        // geocode and hp-geocode answer the district centre (billed).
        r = ask("hp-geocode", address);
        QCOMPARE(r.value("hp_geocode").toObject().value("level").toString(),
                 QStringLiteral("district"));
        QVERIFY(r.value("message").toString().contains(QStringLiteral("address import pois")));
        QCOMPARE(balance(), Money::kUnitsPerCredit - price);

        // Import (as the window does) and the same server answers from the data at once.
        AddressStore::ImportReport report = importNow(
            f, AddressStore::Kind::Zipcodes, QStringLiteral(FIXTURE_DIR "/zipcodes-fixture.csv"));
        QCOMPARE(report.imported, 7);
        report =
            importNow(f, AddressStore::Kind::Pois, QStringLiteral(FIXTURE_DIR "/pois-fixture.csv"));
        QCOMPARE(report.imported, 4);
        r = ask("zipcode", address);
        QCOMPARE(r.value("status").toString(), QStringLiteral("OK"));
        QCOMPARE(r.value("zipcode").toString(), QStringLiteral("311122"));
        QCOMPARE(r.value("level").toString(), QStringLiteral("road"));
        QCOMPARE(balance(), Money::kUnitsPerCredit - 2 * price);
        r = ask("hp-geocode", address);
        QJsonObject g = r.value("hp_geocode").toObject();
        QCOMPARE(g.value("level").toString(), QStringLiteral("poi"));
        QCOMPARE(g.value("matched").toString(), QStringLiteral("西溪科创大厦"));
        QCOMPARE(g.value("gcj02").toString(), QStringLiteral("120.052100,30.285300"));
        r = ask("geocode", address);
        QCOMPARE(r.value("offline_geocode").toObject().value("level").toString(),
                 QStringLiteral("poi"));
        QCOMPARE(balance(), Money::kUnitsPerCredit - 4 * price);

        // Services starting over this database load the data (this server's engine forgot it
        // first, so the answers can only come from the second one's load).
        family.engine()->install(nullptr);
        QCOMPARE(ask("zipcode", address).value("status").toString(), QStringLiteral("NO_DATA"));
        Services second(ServerSettings::defaults(), f.service().config());
        second.start();
        QString error;
        QVERIFY2(second.listen(QHostAddress(QHostAddress::LocalHost), 0, &error),
                 qPrintable(error));
        QVERIFY(second.family<AddressFamily>()->waitForLoad(30000));
        const quint16 port = quint16(second.host()->url().port());
        r = ask("zipcode", address, port);
        QCOMPARE(r.value("zipcode").toString(), QStringLiteral("311122"));
        r = ask("hp-geocode", address, port);
        QCOMPARE(r.value("hp_geocode").toObject().value("level").toString(), QStringLiteral("poi"));
        second.stop();
        QCOMPARE(ask("zipcode", address).value("status").toString(), QStringLiteral("NO_DATA"));
    }

    void transferCoordNeedsKeyAndCredits()
    {
        ServerFixture f(QStringLiteral("sqlite"));
        const QByteArray body = "{\"text\":\"116,39\",\"srcCoord\":\"wgs84\"}";
        QCOMPARE(f.client().postJson("/v1/address/transfer-coord", body).status, 401);
        const QByteArray key = f.createKey();
        QCOMPARE(f.client().postJson("/v1/address/transfer-coord", body, key).status, 402);
    }

    // Many billed answers at once over several connections, pipelined, mixed with answers that
    // are not billed (a zip code without data) and refused ones (400): each is answered,
    // charged once before its answer, recorded once, and gives its settlement ticket back.
    void manyBilledAnswersAtOnce_data() { addBackendRows(); }
    void manyBilledAnswersAtOnce()
    {
        SY_START_SERVER(f);
        QVERIFY(addressFamily(f).waitForLoad(30000));
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        const qint64 account = f.store().defaultAccountId();
        const QByteArray paths[] = {"/v1/address/transfer-coord", "/v1/address/zipcode",
                                    "/v1/address/transfer-coord"};
        const QByteArray bodies[] = {
            "{\"text\":\"116.397428,39.90923\",\"srcCoord\":\"gcj02\"}",
            QStringLiteral("{\"text\":\"浙江省杭州市余杭区五常街道文一西路100号\"}").toUtf8(),
            "{\"text\":"};
        constexpr int kClients = 8, kEach = 30;
        std::vector<std::unique_ptr<HttpClient>> clients;
        for (int c = 0; c < kClients; ++c) {
            clients.push_back(std::make_unique<HttpClient>(f.port()));
            for (int i = 0; i < kEach; ++i) { // pipelined: all sent before any answer is read
                const int k = (c + i) % 3;
                clients.back()->send(
                    "POST", paths[k],
                    {{"Authorization", "Bearer " + key}, {"Content-Type", "application/json"}},
                    bodies[k]);
            }
        }
        int billed = 0;
        QSet<QByteArray> ids;
        for (int c = 0; c < kClients; ++c) {
            for (int i = 0; i < kEach; ++i) {
                const int k = (c + i) % 3;
                const HttpReply r = clients[size_t(c)]->readReply();
                QCOMPARE(r.status, k == 2 ? 400 : 200);
                ids.insert(r.header("x-request-id"));
                if (k == 0) {
                    ++billed;
                    QVERIFY(r.json().value("coord_transfer").toObject().contains("WGS84"));
                } else if (k == 1) {
                    QCOMPARE(r.json().value("status").toString(), QStringLiteral("NO_DATA"));
                }
            }
        }
        QCOMPARE(ids.size(), kClients * kEach);
        // Every billed answer was charged once before it left.
        QCOMPARE(f.store().balance(account), Money::kUnitsPerCredit - billed * price(f));
        QCOMPARE(f.store().ledgerSum(account), f.store().balance(account));
        QCOMPARE(f.store().ledger(account, 1000).size(), billed + 1); // and the grant
        // Every request has its record (the unbilled ones' go just after their answers).
        UsageQuery q;
        q.accountId = account;
        q.limit = 1000;
        QTRY_COMPARE(f.store().usage(q).records.size(), kClients * kEach);
        int charged = 0;
        for (const UsageRecord &u : f.store().usage(q).records)
            charged += u.cost > 0 && u.status == 200;
        QCOMPARE(charged, billed);
        QTRY_COMPARE(f.service().expectedSettlements(), 0);
    }

    // A billed request holds its reservation until its charge has committed and the balance
    // it left is known: admitting another request in between, on the balance from before the
    // charge, could overdraw the account.
    void holdLastsUntilTheChargeCommits_data() { addBackendRows(); }
    void holdLastsUntilTheChargeCommits()
    {
        SY_START_SERVER(f);
        const QByteArray key = f.createKey();
        const qint64 account = f.store().defaultAccountId();
        const qint64 price = ::price(f);
        f.grant(price); // one request's reservation
        const QByteArray body = "{\"text\":\"116.397428,39.90923\",\"srcCoord\":\"gcj02\"}";

        // The writer held: a settlement queues and does not commit.
        WriterHold writer(f.service());

        HttpClient first(f.port());
        first.send("POST", "/v1/address/transfer-coord", {{"Authorization", "Bearer " + key}},
                   body);
        // Its work is done in microseconds; its ticket then comes back with its settlement,
        // which waits for the writer, as its answer does.
        QTest::qWait(300);
        QCOMPARE(f.service().expectedSettlements(), 0);
        QVERIFY(!first.socket().waitForReadyRead(100));

        const HttpReply second = f.client().postJson("/v1/address/transfer-coord", body, key);
        QCOMPARE(second.status, 402);
        QVERIFY2(second.errorMessage().contains("held by requests in progress"),
                 qPrintable(second.errorMessage()));

        writer.release();
        QCOMPARE(first.readReply().status, 200);
        QCOMPARE(f.store().balance(account), qint64(0));
        QCOMPARE(f.client().postJson("/v1/address/transfer-coord", body, key).status, 402);
        QCOMPARE(f.store().balance(account), qint64(0));
    }

    // Another process (the CLI, another instance) imports into the shared database: a running
    // server notices within address.reload_seconds and answers from the new rows.
    void dataImportedElsewhereIsReloaded_data() { addBackendRows(); }
    void dataImportedElsewhereIsReloaded()
    {
        ServerSettings settings = ServerSettings::defaults();
        settings.familySections["address"] = QJsonObject{{"reload_seconds", 0.2}};
        SY_START_SERVER(f, settings);
        QCOMPARE(addressFamily(f).reloadMs(), 200);
        QVERIFY(addressFamily(f).waitForLoad(30000));
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        const QByteArray body = "{\"text\":\"广东省深圳市南山区科技南十二路2号\"}";
        auto zipcode = [&] { return f.client().postJson("/v1/address/zipcode", body, key).json(); };
        QVERIFY(zipcode().value("zipcode").toString() != QStringLiteral("518057"));
        // Written on the test's own connection: the family's engine is not touched.
        const AddressStore::ImportReport r = AddressData::importData(
            f.store(), AddressStore::Kind::Zipcodes,
            QByteArray("zipcode,province,city,district,town,road\n518057,广东省,深圳市,南山区,,\n"),
            false);
        QCOMPARE(r.imported, 1);
        QTRY_COMPARE_WITH_TIMEOUT(zipcode().value("zipcode").toString(), QStringLiteral("518057"),
                                  15000);
        QCOMPARE(zipcode().value("status").toString(), QStringLiteral("OK"));
    }

    // Two servers in one process (two Services over two databases) keep their imported data
    // apart: each answers from what was imported into its own database, even while both
    // watch their databases for imports.
    void twoServersDoNotShareImportedData_data() { addBackendRows(); }
    void twoServersDoNotShareImportedData()
    {
        ServerSettings settings = ServerSettings::defaults();
        settings.familySections["address"] = QJsonObject{{"reload_seconds", 0.2}};
        SY_START_SERVER(a, settings);
        ServerFixture b(backend, settings);
        QVERIFY(b.ready());
        QVERIFY(&addressFamily(a) != &addressFamily(b));
        QVERIFY(addressFamily(a).engine() != addressFamily(b).engine());
        QVERIFY(addressFamily(a).waitForLoad(30000) && addressFamily(b).waitForLoad(30000));
        const QByteArray keyA = a.createKey();
        a.grant(Money::kUnitsPerCredit);
        const QByteArray keyB = b.createKey();
        b.grant(Money::kUnitsPerCredit);
        const QString hangzhou = QStringLiteral("浙江省杭州市余杭区五常街道文一西路100号");
        const QString shenzhen = QStringLiteral("广东省深圳市南山区科技南十二路2号");

        // Into a: a answers, b still has no data.
        QCOMPARE(importNow(a, AddressStore::Kind::Zipcodes,
                           QStringLiteral(FIXTURE_DIR "/zipcodes-fixture.csv"))
                     .imported,
                 7);
        QCOMPARE(ask(a, keyA, "zipcode", hangzhou).value("zipcode").toString(),
                 QStringLiteral("311122"));
        QCOMPARE(ask(b, keyB, "zipcode", hangzhou).value("status").toString(),
                 QStringLiteral("NO_DATA"));
        QCOMPARE(addressFamily(b).engine()->localData()->zipCount(), 0);

        // The opposite: into b (by another process, as far as b's server knows: its reload
        // picks it up), and a does not get it.
        QTemporaryDir dir;
        QFile csv(dir.filePath("shenzhen.csv"));
        QVERIFY(csv.open(QIODevice::WriteOnly));
        csv.write("zipcode,province,city,district\n518057,广东省,深圳市,南山区\n");
        csv.close();
        QCOMPARE(
            AddressData::importFile(b.store(), AddressStore::Kind::Zipcodes, csv.fileName(), false)
                .imported,
            1);
        QTRY_COMPARE_WITH_TIMEOUT(ask(b, keyB, "zipcode", shenzhen).value("zipcode").toString(),
                                  QStringLiteral("518057"), 15000);
        QCOMPARE(ask(b, keyB, "zipcode", hangzhou).value("status").toString(),
                 QStringLiteral("NO_DATA"));
        QTest::qWait(600); // three of a's reload periods: nothing of b's arrives
        QCOMPARE(ask(a, keyA, "zipcode", shenzhen).value("status").toString(),
                 QStringLiteral("NO_DATA"));
        QCOMPARE(ask(a, keyA, "zipcode", hangzhou).value("zipcode").toString(),
                 QStringLiteral("311122"));
        QCOMPARE(addressFamily(a).engine()->localData()->zipCount(), 7);
    }
};

QTEST_GUILESS_MAIN(TestAddressHttp)
#include "tst_address_http.moc"
