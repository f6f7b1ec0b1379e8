// The image-task routes over HTTP against the fake upstream's OpenAI images API
// (tests/fake_upstream): synchronous and asynchronous tasks, the states, partial and failed
// tasks, signed links (working, altered, expired), exact billing, validation, the callback URL
// guard at submission, abandoned tasks after a restart, and the 404/410 of GET.

#include "ImageLinks.h"
#include "images/ImageTables.h"
#include "ImagesTestSupport.h"
#include "Migrations.h"
#include "Money.h"

#include <QDateTime>
#include <QSqlQuery>
#include <QUrlQuery>

using namespace ImagesTest;

class TestImagesHttp : public QObject
{
    Q_OBJECT

private slots:
    void completedSync_data() { backends(); }
    void completedSync();
    void linksSignedAndExpiring_data() { backends(); }
    void linksSignedAndExpiring();
    void partialBillsWhatWasMade_data() { backends(); }
    void partialBillsWhatWasMade();
    void upstreamFailuresNotBilled_data();
    void upstreamFailuresNotBilled();
    void asyncPolling_data() { backends(); }
    void asyncPolling();
    void validation_data();
    void validation();
    void insufficientCreditsBeforeUpstream_data() { backends(); }
    void insufficientCreditsBeforeUpstream();
    void noUsableProvider();
    void callbackGuardAtSubmission_data();
    void callbackGuardAtSubmission();
    void getUnknownAndPurged_data() { backends(); }
    void getUnknownAndPurged();
    void abandonedTasksRecovered_data() { backends(); }
    void abandonedTasksRecovered();
    void modelsListed();
    void resendDuringAnAttempt_data() { backends(); }
    void resendDuringAnAttempt();
};

void TestImagesHttp::completedSync()
{
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    SY_START_SERVER(f, settingsWith(section(fake)));
    const QByteArray key = f.createKey();
    f.grant(kCredit);
    const qint64 before = balance(f);
    const HttpReply r = post(f,
                             {{"model", "test-image"},
                              {"prompt", "a lighthouse at dusk"},
                              {"n", 2},
                              {"size", "256x256"},
                              {"response_format", "b64_json"},
                              {"unknown_field", true}},
                             key);
    QCOMPARE(r.status, 200);
    const QJsonObject body = r.json();
    QCOMPARE(body.value("status").toString(), QStringLiteral("completed"));
    QVERIFY(body.value("created").toInteger() > 0);
    const QJsonArray data = body.value("data").toArray();
    QCOMPARE(data.size(), 2);
    QSet<QByteArray> distinct;
    for (const QJsonValue &item : data) {
        const QByteArray png =
            QByteArray::fromBase64(item.toObject().value("b64_json").toString().toLatin1());
        QCOMPARE(pngSize(png), qMakePair(256, 256));
        distinct.insert(png);
    }
    QCOMPARE(distinct.size(), 2);
    // Exactly two images billed: held at submission, released, charged at the end.
    QCOMPARE(balance(f), before - 2 * kPrice);
    const QString id = body.value("id").toString();
    QVERIFY(id.startsWith("imgtask_"));
    const auto t = task(f, id);
    QVERIFY(t);
    QCOMPARE(t->status, QStringLiteral("completed"));
    QCOMPARE(t->cost, 2 * kPrice);
    QCOMPARE(count(f, "SELECT COUNT(*) FROM usage_records r JOIN usage_meters m ON m.usage_id = "
                      "r.id AND m.meter = 'images' WHERE m.quantity = 2 AND r.cost = " +
                          QString::number(2 * kPrice)),
             1);
    QCOMPARE(
        count(f, QStringLiteral("SELECT COUNT(*) FROM ledger WHERE request_id LIKE '%1%'").arg(id)),
        3);
    // GET answers the same task, with links.
    const HttpReply g = f.client().get("/v1/images/generations/" + id.toLatin1(), key);
    QCOMPARE(g.status, 200);
    const QJsonObject task = g.json();
    QCOMPARE(task.value("status").toString(), QStringLiteral("completed"));
    QCOMPARE(task.value("images").toArray().size(), 2);
    QVERIFY(task.value("completed_at").toInteger() >= task.value("created_at").toInteger());
}

void TestImagesHttp::linksSignedAndExpiring()
{
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    SY_START_SERVER(f, settingsWith(section(fake)));
    const QByteArray key = f.createKey();
    f.grant(kCredit);
    const HttpReply r = post(f, {{"prompt", "a red kite"}}, key);
    QCOMPARE(r.status, 200);
    const QString url = r.json().value("data").toArray().at(0).toObject().value("url").toString();
    // Built on the Host the request came to (this client sends no port).
    QVERIFY2(url.startsWith(QStringLiteral("http://127.0.0.1")) &&
                 url.contains(QStringLiteral("/v1/images/files/img_")),
             qPrintable(url));
    // No key needed: the link is the credential.
    HttpReply img = f.client().get(target(url));
    QCOMPARE(img.status, 200);
    QCOMPARE(img.header("content-type"), QByteArray("image/png"));
    QVERIFY(pngSize(img.body).first > 0);
    // An altered signature, an altered expiry, another file's id: refused.
    QByteArray altered = target(url);
    altered[altered.size() - 3] = altered[altered.size() - 3] == 'A' ? 'B' : 'A';
    QCOMPARE(f.client().get(altered).status, 403);
    const QUrlQuery q{QUrl(url).query()};
    const qint64 expires = q.queryItemValue("expires").toLongLong();
    QVERIFY(expires > QDateTime::currentSecsSinceEpoch() + 3500);
    QByteArray later = target(url);
    later.replace("expires=" + QByteArray::number(expires),
                  "expires=" + QByteArray::number(expires + 3600));
    QCOMPARE(f.client().get(later).status, 403);
    QCOMPARE(f.client().get(target(url).replace("/img_", "/img_x")).status, 403);
    QCOMPARE(f.client().get(QUrl(url).path().toLatin1()).status, 403);
    // A link signed with the real key but already expired: 410.
    const QByteArray secret =
        QByteArray::fromHex(ImageStore::setting(f.store(), "link_secret").value().toLatin1());
    const QString fileId = QUrl(url).fileName().section(u'.', 0, 0);
    const QString old = ImageLinks::url(QStringLiteral("http://x"), secret, fileId, "png",
                                        QDateTime::currentSecsSinceEpoch() - 1);
    const HttpReply gone = f.client().get(target(old));
    QCOMPARE(gone.status, 410);
    QCOMPARE(gone.json().value("error").toObject().value("code").toString(),
             QStringLiteral("link_expired"));
    // Expired image data is dropped by the periodic job; the link then answers 410 too.
    QSqlQuery expire(f.store().database());
    QVERIFY(expire.exec("UPDATE image_files SET expires_ms = 1"));
    QTRY_COMPARE_WITH_TIMEOUT(count(f, "SELECT COUNT(*) FROM image_files WHERE data IS NULL"),
                              qint64(1), 10000);
}

void TestImagesHttp::partialBillsWhatWasMade()
{
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    SY_START_SERVER(f, settingsWith(section(fake)));
    const QByteArray key = f.createKey();
    f.grant(kCredit);
    const qint64 before = balance(f);
    const HttpReply r = post(f, {{"prompt", "three boats [fake images=1]"}, {"n", 3}}, key);
    QCOMPARE(r.status, 200);
    QCOMPARE(r.json().value("status").toString(), QStringLiteral("partial"));
    QCOMPARE(r.json().value("data").toArray().size(), 1);
    QCOMPARE(balance(f), before - kPrice);
    const auto t = task(f, r.json().value("id").toString());
    QCOMPARE(t->produced, 1);
    QVERIFY2(t->error.contains("1 of 3"), qPrintable(t->error));
}

void TestImagesHttp::upstreamFailuresNotBilled_data()
{
    QTest::addColumn<QString>("backend");
    QTest::addColumn<QString>("directive");
    QTest::addColumn<int>("status");
    QTest::addColumn<QString>("code");
    QTest::newRow("429") << "sqlite"
                         << "[fake fault=429]" << 429 << "upstream_rate_limited";
    QTest::newRow("500") << "sqlite"
                         << "[fake fault=500]" << 502 << "upstream_failed";
    QTest::newRow("timeout") << "sqlite"
                             << "[fake delay-ms=5000]" << 504 << "upstream_timeout";
    QTest::newRow("none made") << "sqlite"
                               << "[fake images=0]" << 502 << "upstream_no_images";
    QTest::newRow("500 pg") << "postgres"
                            << "[fake fault=500]" << 502 << "upstream_failed";
}

void TestImagesHttp::upstreamFailuresNotBilled()
{
    QFETCH(QString, directive);
    QFETCH(int, status);
    QFETCH(QString, code);
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    SY_START_SERVER(f, settingsWith(section(fake, {}, 1500)));
    const QByteArray key = f.createKey();
    f.grant(kCredit);
    const qint64 before = balance(f);
    const HttpReply r = post(f, {{"prompt", "a storm " + directive}, {"n", 2}}, key);
    QCOMPARE(r.status, status);
    const QJsonObject error = r.json().value("error").toObject();
    QCOMPARE(error.value("code").toString(), code);
    QVERIFY(!r.body.contains(kUpstreamKey));
    if (status == 429)
        QVERIFY(!r.header("retry-after").isEmpty());
    QCOMPARE(balance(f), before);
    const auto t = task(f, r.json().value("id").toString());
    QVERIFY(t);
    QCOMPARE(t->status, QStringLiteral("failed"));
    QCOMPARE(t->cost, 0);
    QCOMPARE(count(f, "SELECT COUNT(*) FROM usage_meters WHERE meter = 'images'"), 0);
    QCOMPARE(count(f, "SELECT COUNT(*) FROM image_files"), 0);
}

void TestImagesHttp::asyncPolling()
{
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    SY_START_SERVER(f, settingsWith(section(fake)));
    const QByteArray key = f.createKey();
    f.grant(kCredit);
    const HttpReply r = post(f, {{"prompt", "slow fox [fake delay-ms=500]"}, {"n", 2}}, key,
                             {{"Prefer", "respond-async"}});
    QCOMPARE(r.status, 202);
    const QJsonObject queued = r.json();
    QCOMPARE(queued.value("status").toString(), QStringLiteral("queued"));
    QCOMPARE(queued.value("object").toString(), QStringLiteral("image.generation.task"));
    QVERIFY(queued.value("completed_at").isNull());
    const QByteArray id = queued.value("id").toString().toLatin1();
    QCOMPARE(r.header("location"), "/v1/images/generations/" + id);
    QCOMPARE(r.header("preference-applied"), QByteArray("respond-async"));
    QSet<QString> seen;
    QJsonObject last;
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
            last = f.client().get("/v1/images/generations/" + id, key).json();
            seen.insert(last.value("status").toString());
            return last.value("status").toString() == u"completed";
        }(),
        15000);
    QVERIFY2(seen.contains("in_progress"), qPrintable(QStringList(seen.values()).join(",")));
    const QJsonArray images = last.value("images").toArray();
    QCOMPARE(images.size(), 2);
    for (const QJsonValue &v : images) {
        const QJsonObject img = v.toObject();
        QVERIFY(img.value("id").toString().startsWith("img_"));
        QVERIFY(img.value("expires_at").toInteger() > QDateTime::currentSecsSinceEpoch() + 3500);
        QCOMPARE(f.client().get(target(img.value("url").toString())).status, 200);
    }
    QVERIFY(!last.contains("callback"));
}

void TestImagesHttp::validation_data()
{
    QTest::addColumn<QString>("backend");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("param");
    QTest::newRow("no prompt") << "sqlite" << QByteArray("{\"n\":1}") << "prompt";
    QTest::newRow("empty prompt") << "sqlite" << QByteArray("{\"prompt\":\"  \"}") << "prompt";
    QTest::newRow("prompt number") << "sqlite" << QByteArray("{\"prompt\":5}") << "prompt";
    QTest::newRow("huge prompt") << "sqlite" << ("{\"prompt\":\"" + QByteArray(40000, 'a') + "\"}")
                                 << "prompt";
    QTest::newRow("n zero") << "sqlite" << QByteArray("{\"prompt\":\"x\",\"n\":0}") << "n";
    QTest::newRow("n 11") << "sqlite" << QByteArray("{\"prompt\":\"x\",\"n\":11}") << "n";
    QTest::newRow("n string") << "sqlite" << QByteArray("{\"prompt\":\"x\",\"n\":\"2\"}") << "n";
    QTest::newRow("n fraction") << "sqlite" << QByteArray("{\"prompt\":\"x\",\"n\":1.5}") << "n";
    QTest::newRow("size") << "sqlite" << QByteArray("{\"prompt\":\"x\",\"size\":\"big\"}")
                          << "size";
    QTest::newRow("size huge") << "sqlite"
                               << QByteArray("{\"prompt\":\"x\",\"size\":\"9000x9000\"}") << "size";
    QTest::newRow("quality") << "sqlite" << QByteArray("{\"prompt\":\"x\",\"quality\":\"ultra\"}")
                             << "quality";
    QTest::newRow("format") << "sqlite"
                            << QByteArray("{\"prompt\":\"x\",\"response_format\":\"png\"}")
                            << "response_format";
    QTest::newRow("model") << "sqlite" << QByteArray("{\"prompt\":\"x\",\"model\":\"gpt-4o\"}")
                           << "model";
    QTest::newRow("model type") << "sqlite" << QByteArray("{\"prompt\":\"x\",\"model\":[1]}")
                                << "model";
    QTest::newRow("callback empty")
        << "sqlite" << QByteArray("{\"prompt\":\"x\",\"callbackUrl\":\"\"}") << "callbackUrl";
    QTest::newRow("callback type")
        << "sqlite" << QByteArray("{\"prompt\":\"x\",\"callbackUrl\":7}") << "callbackUrl";
    QTest::newRow("not json") << "sqlite" << QByteArray("{\"prompt\":") << "";
    QTest::newRow("array") << "sqlite" << QByteArray("[]") << "";
}

void TestImagesHttp::validation()
{
    QFETCH(QByteArray, body);
    QFETCH(QString, param);
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    SY_START_SERVER(f, settingsWith(section(fake)));
    const QByteArray key = f.createKey();
    f.grant(kCredit);
    const HttpReply r = f.client().request(
        "POST", "/v1/images/generations",
        {{"Authorization", "Bearer " + key}, {"Content-Type", "application/json"}}, body);
    QCOMPARE(r.status, 400);
    const QJsonObject error = r.json().value("error").toObject();
    QCOMPARE(error.value("type").toString(), QStringLiteral("invalid_request_error"));
    if (!param.isEmpty())
        QCOMPARE(error.value("param").toString(), param);
    QCOMPARE(count(f, "SELECT COUNT(*) FROM image_tasks"), 0);
    // Wrong credentials: 401 before anything else.
    QCOMPARE(post(f, {{"prompt", "x"}}, "sk-wrong").status, 401);
}

void TestImagesHttp::insufficientCreditsBeforeUpstream()
{
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    SY_START_SERVER(f, settingsWith(section(fake)));
    const QByteArray key = f.createKey();
    f.grant(3 * kPrice);
    const HttpReply r = post(f, {{"prompt", "four cats"}, {"n", 4}}, key);
    QCOMPARE(r.status, 402);
    QCOMPARE(count(f, "SELECT COUNT(*) FROM image_tasks"), 0);
    QCOMPARE(balance(f), 3 * kPrice);
    HttpClient stats(fake.port());
    QCOMPARE(stats.get("/fake/stats").json().value("requests").toInt(), 0);
    // Three fit exactly.
    QCOMPARE(post(f, {{"prompt", "three cats"}, {"n", 3}}, key).status, 200);
    QCOMPARE(balance(f), 0);
}

void TestImagesHttp::noUsableProvider()
{
    QTest::addColumn<QString>("backend");
    ServerSettings s = ServerSettings::defaults(); // the built-in openai provider, no key
    ServerFixture f(QStringLiteral("sqlite"), s);
    QVERIFY(f.ready());
    const QByteArray key = f.createKey();
    f.grant(kCredit);
    const HttpReply r = post(f, {{"model", "dall-e-3"}, {"prompt", "x"}}, key);
    QCOMPARE(r.status, 503);
    QVERIFY2(r.errorMessage().contains("images.providers.openai.keys"),
             qPrintable(r.errorMessage()));
    QCOMPARE(balance(f), kCredit);
}

void TestImagesHttp::callbackGuardAtSubmission_data()
{
    QTest::addColumn<QString>("backend");
    QTest::addColumn<QString>("url");
    QTest::addColumn<QString>("reason");
    const QString s = QStringLiteral("sqlite");
    QTest::newRow("http") << s << "http://example.com/hook"
                          << "https";
    QTest::newRow("loopback") << s << "https://127.0.0.1/hook"
                              << "loopback";
    QTest::newRow("private") << s << "https://10.0.0.1/hook"
                             << "private";
    QTest::newRow("metadata") << s << "https://169.254.169.254/latest"
                              << "";
    QTest::newRow("ipv6 loopback") << s << "https://[::1]/hook"
                                   << "loopback";
    QTest::newRow("mapped") << s << "https://[::ffff:127.0.0.1]/hook"
                            << "loopback";
    QTest::newRow("decimal") << s << "https://2130706433/hook"
                             << "loopback";
    QTest::newRow("octal") << s << "https://0177.0.0.1/hook"
                           << "loopback";
    QTest::newRow("name to loopback") << s << "https://localhost/hook"
                                      << "";
    QTest::newRow("user info") << s << "https://u:p@example.com/hook"
                               << "user info";
    QTest::newRow("not a url") << s << "not a url"
                               << "";
}

void TestImagesHttp::callbackGuardAtSubmission()
{
    QFETCH(QString, url);
    QFETCH(QString, reason);
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    SY_START_SERVER(f, settingsWith(section(fake)));
    const QByteArray key = f.createKey();
    f.grant(kCredit);
    const HttpReply r = post(f, {{"prompt", "x"}, {"callbackUrl", url}}, key);
    QCOMPARE(r.status, 400);
    const QJsonObject error = r.json().value("error").toObject();
    QCOMPARE(error.value("param").toString(), QStringLiteral("callbackUrl"));
    QVERIFY2(error.value("message").toString().contains(reason),
             qPrintable(error.value("message").toString()));
    QCOMPARE(count(f, "SELECT COUNT(*) FROM image_tasks"), 0);
    QCOMPARE(balance(f), kCredit);
}

void TestImagesHttp::getUnknownAndPurged()
{
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    SY_START_SERVER(f, settingsWith(section(fake)));
    const QByteArray key = f.createKey();
    const QByteArray other = f.createKey("other");
    f.grant(kCredit);
    QCOMPARE(f.client().get("/v1/images/generations/imgtask_nope", key).status, 404);
    QCOMPARE(f.client().get("/v1/images/generations/imgtask_nope").status, 401);
    const HttpReply r = post(f, {{"prompt", "x"}}, key);
    QCOMPARE(r.status, 200);
    const QByteArray id = r.json().value("id").toString().toLatin1();
    QCOMPARE(f.client().get("/v1/images/generations/" + id, other).status, 200); // same account
    // Past the retention, the purge drops the record's content and GET answers 410.
    QSqlQuery q(f.store().database());
    QVERIFY(q.exec("UPDATE image_tasks SET completed_ms = 1"));
    QTRY_COMPARE_WITH_TIMEOUT(f.client().get("/v1/images/generations/" + id, key).status, 410,
                              10000);
    QCOMPARE(count(f, "SELECT COUNT(*) FROM image_files"), 0);
}

void TestImagesHttp::abandonedTasksRecovered()
{
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    SY_START_SERVER(f, settingsWith(section(fake, {{"task_lease_ms", 300}})));
    const QByteArray key = f.createKey();
    f.grant(kCredit);
    const qint64 before = balance(f);
    // Two tasks of an instance that died: one still queued, one whose upstream call was made.
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    for (const char *status : {"queued", "in_progress"}) {
        ImageStore::Task t;
        t.id = QStringLiteral("imgtask_dead_") + QLatin1String(status);
        t.accountId = f.store().defaultAccountId();
        t.model = "test-image";
        t.prompt = "left behind";
        t.params = "{\"n\":2,\"response_format\":\"url\"}";
        t.n = 2;
        t.status = QLatin1String(status);
        t.baseUrl = "http://127.0.0.1";
        t.price = kPrice;
        t.held = 2 * kPrice;
        t.requestId = "req_dead";
        t.owner = "gone:1:0000";
        t.leaseUntil = now - 1000;
        t.createdMs = now - 5000;
        MoneyJournal journal(f.store());
        QCOMPARE(ImageStore::insertTask(journal, t, 0).status, ChargeResult::Status::Committed);
    }
    QCOMPARE(balance(f), before - 4 * kPrice);
    QTRY_COMPARE_WITH_TIMEOUT(task(f, "imgtask_dead_in_progress")->status, QStringLiteral("failed"),
                              10000);
    QCOMPARE(task(f, "imgtask_dead_in_progress")->errorCode, QStringLiteral("task_interrupted"));
    QTRY_COMPARE_WITH_TIMEOUT(task(f, "imgtask_dead_queued")->status, QStringLiteral("completed"),
                              10000);
    // The failed one's hold came back; the resumed one paid for its two images.
    QCOMPARE(balance(f), before - 2 * kPrice);
}

void TestImagesHttp::modelsListed()
{
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    ServerFixture f(QStringLiteral("sqlite"), settingsWith(section(fake)));
    QVERIFY(f.ready());
    const QJsonArray models = f.client().get("/v1/models").json().value("data").toArray();
    bool found = false;
    for (const QJsonValue &m : models)
        if (m.toObject().value("id").toString() == u"test-image") {
            found = true;
            QCOMPARE(m.toObject().value("pricing").toObject().value("per_image").toString(),
                     Money::formatCredits(kPrice));
        }
    QVERIFY(found);
}

// The outbox in the store: a resend asked for while a scheduled attempt is in flight is not lost
// when that attempt is recorded, even when it succeeded.
void TestImagesHttp::resendDuringAnAttempt()
{
    QFETCH(QString, backend);
    TestDatabase t(backend);
    if (!t.ready()) {
        if (qEnvironmentVariable("SWITCHYARD_REQUIRE_PG") == QLatin1String("1"))
            QFAIL(qPrintable(t.skipReason()));
        QSKIP(qPrintable(t.skipReason()));
    }
    QSqlDatabase db = t.config().open(QStringLiteral("resend"));
    Migrations::apply(db, t.config().kind(), {ImageTables::migrations()});
    Store store(db, t.config().kind());
    QSqlQuery q(db);
    QVERIFY(q.exec("INSERT INTO webhook_deliveries (task_id, account_id, url, status, next_ms, "
                   "created_ms, updated_ms) VALUES ('imgtask_x', 1, 'https://h/x', 'pending', 0, "
                   "0, 0)"));
    const auto claimed = ImageStore::claim(store, "me", 1000, 60000, 10);
    QCOMPARE(claimed.size(), 1);
    QVERIFY(ImageStore::claim(store, "other", 1000, 60000, 10).isEmpty()); // leased
    QVERIFY(ImageStore::resend(store, claimed[0].id, 0, 1500));
    ImageStore::Attempt a;
    a.deliveryId = claimed[0].id;
    a.attempt = 1;
    a.startedMs = 1000;
    a.url = "https://h/x";
    a.status = 200;
    auto after = ImageStore::recordAttempt(store, a, "me", true, "delivered", 0);
    QCOMPARE(after->status, QStringLiteral("pending"));
    QVERIFY(after->manual);
    QCOMPARE(ImageStore::nextDue(store, 2000), 2000); // due at once
    const auto again = ImageStore::claim(store, "me", 2000, 60000, 10);
    QCOMPARE(again.size(), 1);
    QVERIFY(again[0].manual);
    a.attempt = 2;
    a.manual = true;
    after = ImageStore::recordAttempt(store, a, "me", false, "delivered", 0);
    QCOMPARE(after->status, QStringLiteral("delivered"));
    QVERIFY(!after->manual);
    QCOMPARE(after->scheduled, 1);
    QCOMPARE(after->attempts, 2);
    QCOMPARE(ImageStore::nextDue(store, 3000), 0);
}

QTEST_GUILESS_MAIN(TestImagesHttp)
#include "tst_images_http.moc"
