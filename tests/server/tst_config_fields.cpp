// The config toolkit (server/ConfigFields.h): every reader's fallback for an absent field, its
// refusal of a wrong type and of a value out of range, and the whole path of the field in the
// message; sections, lists and members with their paths; and ServerSettings read through it.

#include "ConfigFields.h"
#include "ServerSettings.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QtTest>

namespace {

QJsonObject obj(const QByteArray &json)
{
    return QJsonDocument::fromJson(json).object();
}

// The message a read throws, or empty when it returns.
template <class Read> QString errorOf(Read &&read)
{
    try {
        read();
    } catch (const ConfigError &e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

} // namespace

class TestConfigFields : public QObject
{
    Q_OBJECT

private slots:
    void errorNamesThePath()
    {
        const ConfigError e(QStringLiteral("audio.workers"), QStringLiteral("must be 1"));
        QCOMPARE(QString::fromUtf8(e.what()), QStringLiteral("config: audio.workers must be 1"));
        QCOMPARE(e.path(), QStringLiteral("audio.workers"));
        QCOMPARE(errorOf([] { configFail({}, QStringLiteral("model x names no provider")); }),
                 QStringLiteral("config: model x names no provider"));
        // A std::runtime_error to the callers that catch one (the programs, the window).
        QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                                 configFail(QStringLiteral("a"), QStringLiteral("b")));
    }

    void paths()
    {
        const ConfigFields root(obj(R"({"audio":{"providers":{"local":{"timeouts":{}}},
                                          "models":[{"id":"a"},{"id":"b"}]}})"));
        QCOMPARE(root.pathOf(QStringLiteral("server")), QStringLiteral("server"));
        const ConfigFields audio = root.section(QStringLiteral("audio"));
        QCOMPARE(audio.path(), QStringLiteral("audio"));
        const QList<ConfigFields> providers =
            audio.members(QStringLiteral("providers"), QStringLiteral("an object"));
        QCOMPARE(providers.size(), 1);
        QCOMPARE(providers[0].name(), QStringLiteral("local"));
        QCOMPARE(providers[0].path(), QStringLiteral("audio.providers.local"));
        QCOMPARE(providers[0].section(QStringLiteral("timeouts")).pathOf(QStringLiteral("idle_ms")),
                 QStringLiteral("audio.providers.local.timeouts.idle_ms"));
        const QList<ConfigFields> models =
            audio.list(QStringLiteral("models"), QStringLiteral("an array of model entries"));
        QCOMPARE(models.size(), 2);
        QCOMPARE(models[1].path(), QStringLiteral("audio.models[1]"));
        QCOMPARE(models[1].string(QStringLiteral("id"), {}), QStringLiteral("b"));
        QCOMPARE(errorOf([&] { models[1].fail(QStringLiteral("id"), QStringLiteral("is taken")); }),
                 QStringLiteral("config: audio.models[1].id is taken"));
        QCOMPARE(errorOf([&] { models[1].failHere(QStringLiteral("is odd")); }),
                 QStringLiteral("config: audio.models[1] is odd"));
    }

    void sections()
    {
        const ConfigFields s(obj(R"({"a":{"x":1},"n":5,"l":[{"x":1},2],"m":{"p":{},"q":3}})"),
                             QStringLiteral("social"));
        // Absent: an empty section that still knows its path.
        const ConfigFields absent = s.section(QStringLiteral("cache"));
        QVERIFY(absent.json().isEmpty());
        QCOMPARE(absent.path(), QStringLiteral("social.cache"));
        QVERIFY(s.list(QStringLiteral("none"), QStringLiteral("an array")).isEmpty());
        QVERIFY(s.members(QStringLiteral("none"), QStringLiteral("an object")).isEmpty());
        QCOMPARE(s.section(QStringLiteral("a")).value(QStringLiteral("x")).toInt(), 1);
        QCOMPARE(errorOf([&] { s.section(QStringLiteral("n")); }),
                 QStringLiteral("config: social.n must be an object"));
        QCOMPARE(errorOf([&] { s.section(QStringLiteral("n"), QStringLiteral("an object {a}")); }),
                 QStringLiteral("config: social.n must be an object {a}"));
        QCOMPARE(errorOf([&] { s.list(QStringLiteral("n"), QStringLiteral("an array of x")); }),
                 QStringLiteral("config: social.n must be an array of x"));
        QCOMPARE(errorOf([&] { s.list(QStringLiteral("l"), QStringLiteral("an array of x")); }),
                 QStringLiteral("config: social.l[1] must be an object"));
        QCOMPARE(errorOf([&] {
                     s.members(QStringLiteral("n"), QStringLiteral("an object of name: x"));
                 }),
                 QStringLiteral("config: social.n must be an object of name: x"));
        QCOMPARE(errorOf([&] {
                     s.members(QStringLiteral("m"), QStringLiteral("an object"),
                               QStringLiteral("an object {enabled}"));
                 }),
                 QStringLiteral("config: social.m.q must be an object {enabled}"));
    }

    void onlyKnown()
    {
        const ConfigFields s(obj(R"({"enabled":true,"enable":1})"), QStringLiteral("x.y"));
        QCOMPARE(errorOf([&] {
                     s.onlyKnown({"enabled", "models"});
                 }),
                 QStringLiteral("config: x.y.enable is not a setting (enabled, models)"));
        QCOMPARE(errorOf([&] { s.onlyKnown({"enabled", "enable"}); }), QString());
    }

    void flag()
    {
        const ConfigFields s(obj(R"({"on":true,"off":false,"text":"yes","one":1})"),
                             QStringLiteral("s"));
        QCOMPARE(s.flag(QStringLiteral("absent"), true), true);
        QCOMPARE(s.flag(QStringLiteral("absent"), false), false);
        QCOMPARE(s.flag(QStringLiteral("on"), false), true);
        QCOMPARE(s.flag(QStringLiteral("off"), true), false);
        for (const char *bad : {"text", "one"})
            QCOMPARE(errorOf([&] { s.flag(QLatin1String(bad), false); }),
                     QStringLiteral("config: s.%1 must be true or false").arg(QLatin1String(bad)));
    }

    void string()
    {
        const ConfigFields s(obj(R"({"name":"x","empty":"","n":3})"), QStringLiteral("s"));
        QCOMPARE(s.string(QStringLiteral("absent"), QStringLiteral("d")), QStringLiteral("d"));
        QCOMPARE(s.string(QStringLiteral("name"), QStringLiteral("d")), QStringLiteral("x"));
        QCOMPARE(s.string(QStringLiteral("empty"), QStringLiteral("d")), QString());
        QCOMPARE(errorOf([&] { s.string(QStringLiteral("n"), {}); }),
                 QStringLiteral("config: s.n must be a string"));
        QCOMPARE(errorOf([&] { s.string(QStringLiteral("n"), {}, QStringLiteral("a path")); }),
                 QStringLiteral("config: s.n must be a path"));
    }

    void strings()
    {
        const ConfigFields s(obj(R"({"hosts":["a","b"],"mixed":["a",1],"one":"a"})"),
                             QStringLiteral("s"));
        QCOMPARE(s.strings(QStringLiteral("absent"), {"d"}), QStringList{"d"});
        QCOMPARE(s.strings(QStringLiteral("hosts"), {}), (QStringList{"a", "b"}));
        QCOMPARE(errorOf([&] { s.strings(QStringLiteral("one"), {}); }),
                 QStringLiteral("config: s.one must be an array of strings"));
        QCOMPARE(errorOf([&] {
                     s.strings(QStringLiteral("mixed"), {}, QStringLiteral("an array of hosts"));
                 }),
                 QStringLiteral("config: s.mixed must be an array of hosts"));
    }

    void whole_data()
    {
        QTest::addColumn<QByteArray>("value");
        QTest::addColumn<int>("expected"); // -1: refused
        QTest::newRow("absent") << QByteArray() << 7;
        QTest::newRow("low") << QByteArray("1") << 1;
        QTest::newRow("high") << QByteArray("20") << 20;
        QTest::newRow("below") << QByteArray("0") << -1;
        QTest::newRow("above") << QByteArray("21") << -1;
        QTest::newRow("fraction") << QByteArray("2.5") << -1;
        QTest::newRow("string") << QByteArray("\"5\"") << -1;
        QTest::newRow("null") << QByteArray("null") << -1;
        QTest::newRow("huge") << QByteArray("1e300") << -1;
    }

    void whole()
    {
        QFETCH(QByteArray, value);
        QFETCH(int, expected);
        const ConfigFields s(value.isEmpty() ? QJsonObject{} : obj("{\"n\":" + value + "}"),
                             QStringLiteral("decisions.bounds"));
        const auto read = [&] { return s.whole(QStringLiteral("n"), 7, {1, 20}); };
        if (expected >= 0) {
            QCOMPARE(read(), expected);
            return;
        }
        QCOMPARE(errorOf(read),
                 QStringLiteral("config: decisions.bounds.n must be a whole number from 1 to 20"));
    }

    void wholeWording()
    {
        const ConfigFields s(obj(R"({"n":-1,"big":3000000000})"), QStringLiteral("server"));
        QCOMPARE(errorOf([&] { s.whole(QStringLiteral("n"), 0, {.lo = 1}); }),
                 QStringLiteral("config: server.n must be a positive whole number"));
        QCOMPARE(errorOf([&] {
                     s.whole(QStringLiteral("n"), 0, {.lo = 0, .note = QStringLiteral("0: off")});
                 }),
                 QStringLiteral("config: server.n must be a whole number, 0 or more (0: off)"));
        QCOMPARE(errorOf([&] {
                     s.whole(QStringLiteral("n"), 0, {1, 9, QStringLiteral("tokens")});
                 }),
                 QStringLiteral("config: server.n must be a whole number of tokens from 1 to 9"));
        // Beyond an int: refused by the int reader, read by the 64-bit one.
        QVERIFY(!errorOf([&] { s.whole(QStringLiteral("big"), 0, {.lo = 1}); }).isEmpty());
        QCOMPARE(s.whole(QStringLiteral("big"), qint64(0), {.lo = 1}), qint64(3'000'000'000));
        QCOMPARE(s.whole(QStringLiteral("absent"), qint64(42), {.lo = 1}), qint64(42));
        QCOMPARE(errorOf([&] {
                     s.whole(QStringLiteral("big"), qint64(0), {1, 1'000'000'000});
                 }),
                 QStringLiteral("config: server.big must be a whole number from 1 to 1000000000"));
    }

    void ms()
    {
        const ConfigFields s(obj(R"({"a":0,"b":86400000,"c":86400001,"d":1000.5,"e":-1})"),
                             QStringLiteral("gateway.providers.x.timeouts"));
        QCOMPARE(s.ms(QStringLiteral("absent"), 15'000), 15'000);
        QCOMPARE(s.ms(QStringLiteral("a"), 1), 0);
        QCOMPARE(s.ms(QStringLiteral("b"), 1), 86'400'000);
        for (const char *bad : {"c", "d", "e"})
            QCOMPARE(errorOf([&] { s.ms(QLatin1String(bad), 1); }),
                     QStringLiteral("config: gateway.providers.x.timeouts.%1 must be a whole "
                                    "number of milliseconds from 0 to 86400000")
                         .arg(QLatin1String(bad)));
    }

    void number()
    {
        const ConfigFields s(obj(R"({"a":0.29,"b":86401,"c":"1"})"), QStringLiteral("address"));
        QCOMPARE(s.number(QStringLiteral("absent"), 30, 0, 86'400), 30.0);
        QCOMPARE(s.number(QStringLiteral("a"), 30, 0, 86'400), 0.29);
        const QString message =
            QStringLiteral("must be a number from 0 to 86400 (0: only at start)");
        for (const char *bad : {"b", "c"})
            QCOMPARE(errorOf([&] {
                         s.number(QLatin1String(bad), 30, 0, 86'400,
                                  QStringLiteral("0: only at start"));
                     }),
                     QStringLiteral("config: address.%1 %2").arg(QLatin1String(bad), message));
    }

    void credits()
    {
        const ConfigFields s(obj(R"({"price":"0.5","zero":"0","neg":"-1","number":0.5,
                                     "junk":"0.5x","big":"1000000.000000001","max":"1000000"})"),
                             QStringLiteral("images.models[0]"));
        const QString e = QStringLiteral("0.04");
        QCOMPARE(s.credits(QStringLiteral("absent"), 7, e), qint64(7));
        QCOMPARE(s.credits(QStringLiteral("price"), 7, e), qint64(500'000'000));
        QCOMPARE(s.credits(QStringLiteral("zero"), 7, e), qint64(0));
        const QString any = QStringLiteral("must be a decimal string of credits, e.g. \"0.04\"");
        for (const char *bad : {"neg", "number", "junk"})
            QCOMPARE(errorOf([&] { s.credits(QLatin1String(bad), 0, e); }),
                     QStringLiteral("config: images.models[0].%1 %2").arg(QLatin1String(bad), any));
        // Above zero.
        QCOMPARE(errorOf([&] { s.credits(QStringLiteral("zero"), 0, e, {.lo = 1}); }),
                 QStringLiteral("config: images.models[0].zero must be a decimal string of "
                                "credits above zero, e.g. \"0.04\""));
        // A range, and the unit the price is per.
        const CreditRange range{0, 1'000'000'000'000'000, QStringLiteral("per image")};
        QCOMPARE(s.credits(QStringLiteral("max"), 0, e, range), qint64(1'000'000'000'000'000));
        QCOMPARE(errorOf([&] { s.credits(QStringLiteral("big"), 0, e, range); }),
                 QStringLiteral("config: images.models[0].big must be a decimal string of "
                                "credits per image from 0 to 1000000, e.g. \"0.04\""));
    }

    void httpUrl()
    {
        // (Not a raw string: moc reads the double slash in one as a comment.)
        const ConfigFields s(QJsonObject{{"ok", "https://h.example/v1//"},
                                         {"ftp", "ftp://h"},
                                         {"rel", "h/v1"},
                                         {"query", "https://h.example/?a=1"},
                                         {"n", 5}},
                             QStringLiteral("images"));
        QCOMPARE(s.httpUrl(QStringLiteral("absent"), QStringLiteral("d")), QStringLiteral("d"));
        QCOMPARE(s.httpUrl(QStringLiteral("ok"), {}), QStringLiteral("https://h.example/v1"));
        QCOMPARE(s.httpUrl(QStringLiteral("query"), {}), QStringLiteral("https://h.example/?a=1"));
        for (const char *bad : {"ftp", "rel", "n"})
            QCOMPARE(errorOf([&] { s.httpUrl(QLatin1String(bad), {}); }),
                     QStringLiteral("config: images.%1 must be an http or https URL")
                         .arg(QLatin1String(bad)));
        QCOMPARE(errorOf([&] { s.httpUrl(QStringLiteral("query"), {}, true); }),
                 QStringLiteral("config: images.query must be an http or https URL without "
                                "query, e.g. \"https://switchyard.example.com\""));
    }

    void urlPath()
    {
        const ConfigFields s(obj(R"({"ok":"/api/v1/","rel":"api","q":"/a?b","n":1})"),
                             QStringLiteral("social.providers.t"));
        QCOMPARE(s.urlPath(QStringLiteral("absent"), QStringLiteral("/x")), QStringLiteral("/x"));
        QCOMPARE(s.urlPath(QStringLiteral("ok"), {}), QStringLiteral("/api/v1/"));
        for (const char *bad : {"rel", "q", "n"})
            QCOMPARE(errorOf([&] { s.urlPath(QLatin1String(bad), {}); }),
                     QStringLiteral("config: social.providers.t.%1 must be a path starting with /")
                         .arg(QLatin1String(bad)));
    }

    void choice()
    {
        enum class Kind
        {
            Local,
            Remote,
            Other
        };
        const ConfigFields s(obj(R"({"a":"remote","b":"grpc","c":2})"),
                             QStringLiteral("audio.providers.x"));
        const auto read = [&](const char *field) {
            return s.choice(QLatin1String(field), Kind::Other,
                            {{"local", Kind::Local}, {"remote", Kind::Remote}});
        };
        // The same options name a value when it is written back.
        const ConfigOptions<Kind> kinds = {{"local", Kind::Local}, {"remote", Kind::Remote}};
        QCOMPARE(optionName(kinds, Kind::Remote), QStringLiteral("remote"));
        QCOMPARE(optionName(kinds, Kind::Other), QString());
        QCOMPARE(s.choice(QStringLiteral("a"), Kind::Other, kinds), Kind::Remote);
        QCOMPARE(read("absent"), Kind::Other);
        QCOMPARE(read("a"), Kind::Remote);
        QCOMPARE(errorOf([&] { read("b"); }),
                 QStringLiteral("config: audio.providers.x.b must be local or remote, not 'grpc'"));
        QCOMPARE(errorOf([&] { read("c"); }),
                 QStringLiteral("config: audio.providers.x.c must be local or remote, not '2'"));
        QCOMPARE(errorOf([&] {
                     s.choice(QStringLiteral("b"), 0, {{"a", 1}, {"b", 2}, {"c", 3}},
                              QStringLiteral("a: first"));
                 }),
                 QStringLiteral("config: audio.providers.x.b must be a, b or c, not 'grpc' (a: "
                                "first)"));
    }

    void within()
    {
        const ConfigFields s(obj(R"({"fetch":{}})"), QStringLiteral("images.webhooks"));
        QCOMPARE(s.within(QStringLiteral("fetch"), [] { return 5; }), 5);
        QCOMPARE(errorOf([&] {
                     s.within(QStringLiteral("fetch"), []() -> int {
                         throw std::runtime_error("allow_http: must be true or false");
                     });
                 }),
                 QStringLiteral("config: images.webhooks.fetch.allow_http: must be true or false"));
        QCOMPARE(errorOf([&] {
                     s.within(
                         QStringLiteral("models"),
                         []() -> int { throw std::invalid_argument("a model has no id"); },
                         QStringLiteral(": "));
                 }),
                 QStringLiteral("config: images.webhooks.models: a model has no id"));
        // A ConfigError from inside keeps its own path.
        QCOMPARE(errorOf([&] {
                     s.within(QStringLiteral("fetch"), []() -> int {
                         configFail(QStringLiteral("elsewhere.x"), QStringLiteral("is bad"));
                     });
                 }),
                 QStringLiteral("config: elsewhere.x is bad"));
    }

    void upsert()
    {
        struct Item
        {
            QString id;
            int v = 0;
        };
        QList<Item> items{{QStringLiteral("a"), 1}, {QStringLiteral("b"), 2}};
        upsertById(items, Item{QStringLiteral("b"), 3});
        upsertById(items, Item{QStringLiteral("c"), 4});
        QCOMPARE(items.size(), 3);
        QCOMPARE(items[1].v, 3);
        QCOMPARE(items[2].id, QStringLiteral("c"));
    }

    // The server section and the rate limits, read through the toolkit: values, and messages
    // naming the field.
    void serverSettings_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("error"); // empty: accepted
        QTest::newRow("empty") << QByteArray("{}") << QString();
        QTest::newRow("positive")
            << QByteArray(R"({"server":{"idle_timeout_ms":0}})")
            << "config: server.idle_timeout_ms must be a positive whole number";
        QTest::newRow("fraction")
            << QByteArray(R"({"server":{"max_json_body_bytes":1.5}})")
            << "config: server.max_json_body_bytes must be a positive whole number";
        QTest::newRow("off") << QByteArray(R"({"server":{"min_body_rate":-1}})")
                             << "config: server.min_body_rate must be a whole number, 0 or more "
                                "(0: off)";
        QTest::newRow("sync") << QByteArray(R"({"server":{"sqlite_synchronous":"off"}})")
                              << "config: server.sqlite_synchronous must be normal or full, not "
                                 "'off'";
        QTest::newRow("shared") << QByteArray(R"({"server":{"shared_state":"on"}})")
                                << "config: server.shared_state must be auto or off, not 'on' "
                                   "(auto: shared with PostgreSQL; off: per instance)";
        QTest::newRow("metrics") << QByteArray(R"({"server":{"metrics_public":"yes"}})")
                                 << "config: server.metrics_public must be true or false";
        QTest::newRow("server type")
            << QByteArray(R"({"server":[]})") << "config: server must be an object";
        QTest::newRow("family type")
            << QByteArray(R"({"gateway":[]})") << "config: gateway must be an object";
        QTest::newRow("tier type") << QByteArray(R"({"rate_limits":{"gold":5}})")
                                   << "config: rate_limits.gold must be an object of bucket: "
                                      "requests per minute";
        QTest::newRow("bucket")
            << QByteArray(R"({"rate_limits":{"gold":{"chat":1.5}}})")
            << "config: rate_limits.gold.chat must be a whole number of requests per minute, 0 or "
               "more (0: unlimited)";
    }

    void serverSettings()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, error);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(json);
        f.close();
        QCOMPARE(errorOf([&] { ServerSettings::fromConfigFile(path); }), error);
    }

    void serverSettingsValues()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"server":{"max_json_body_bytes":2048,"idle_timeout_ms":500,
                    "min_body_rate":0,"sqlite_synchronous":"full","shared_state":"off",
                    "metrics_public":true},
                    "rate_limits":{"gold":{"chat":0,"default":5}},
                    "audio":{"workers":2}})");
        f.close();
        const ServerSettings s = ServerSettings::fromConfigFile(path);
        QCOMPARE(s.maxJsonBody, qint64(2048));
        QCOMPARE(s.idleTimeoutMs, 500);
        QCOMPARE(s.minBodyRate, qint64(0));
        QVERIFY(s.sqliteFullSync);
        QVERIFY(!s.sharedState);
        QVERIFY(s.metricsPublic);
        QCOMPARE(s.tier(QStringLiteral("gold")).limitFor(QStringLiteral("chat")), 0);
        QCOMPARE(s.tier(QStringLiteral("gold")).limitFor(QStringLiteral("other")), 5);
        QCOMPARE(s.familySections.value(QStringLiteral("audio")).toObject().value("workers"), 2);
        // What the file leaves out keeps its default.
        QCOMPARE(s.maxUploadBody, ServerSettings::defaults().maxUploadBody);
    }
};

QTEST_GUILESS_MAIN(TestConfigFields)
#include "tst_config_fields.moc"
