// Several instances on one database behave as one (server/README.md, "Several instances"):
// switchyard-server processes on one PostgreSQL database with requests spread across them at
// once. Rate limits hold across them, the balance is never overdrawn, a revocation made by the
// command line is refused everywhere within 250 ms, a SIGKILLed instance loses no charge and its
// holds stop counting, and the database stopped and started again under load is survived as
// documented. The command line's changes are also seen at once by a server on SQLite.

#include "HttpClient.h"
#include "Money.h"
#include "ServerProcess.h"
#include "Store.h"
#include "TestSupport.h"

#include <atomic>
#include <csignal>
#include <functional>
#include <memory>
#include <mutex>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QScopeGuard>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QTcpServer>
#include <QTemporaryDir>
#include <thread>
#include <vector>

namespace {

const QByteArray kPath = "/v1/address/transfer-coord";
const QByteArray kBody = R"({"text":"116.397428,39.90923","srcCoord":"gcj02"})";
constexpr qint64 kPrice = Money::kUnitsPerCredit / 10'000; // address.price_per_request below

QString runCli(const QStringList &args, QByteArray *out = nullptr)
{
    return runProgram(QStringLiteral(SERVER_BINARY), args, out);
}

QJsonObject configWith(const QJsonObject &server = {}, int addressPerMinute = 100'000)
{
    return QJsonObject{
        {"server", server},
        {"rate_limits", QJsonObject{{"default", QJsonObject{{"default", 100'000},
                                                            {"address", addressPerMinute}}}}},
        {"address", QJsonObject{{"price_per_request", "0.0001"}}},
    };
}

struct Outcome
{
    int status = 0;
    QByteArray requestId;
    HttpReply reply;
};

// `total` requests for kPath, request i to ports[i % n], from `perPort` keep-alive clients per
// port at once; every outcome (status 0: no answer, the instance is gone).
QList<Outcome> spread(const QList<quint16> &ports, int total, const QByteArray &key,
                      int perPort = 3, const std::function<void(int done)> &progress = {})
{
    std::atomic<int> next{0};
    std::mutex lock;
    QList<Outcome> outcomes;
    std::vector<std::thread> threads;
    for (int t = 0; t < int(ports.size()) * perPort; ++t) {
        threads.emplace_back([&, port = ports[t % ports.size()]] {
            auto c = std::make_unique<HttpClient>(port);
            for (;;) {
                const int i = next++;
                if (i >= total)
                    return;
                const HttpReply r = c->postJson(kPath, kBody, key);
                Outcome o{r.ok ? r.status : 0, r.header("x-request-id"), r};
                int done;
                {
                    std::lock_guard g(lock);
                    outcomes.append(o);
                    done = int(outcomes.size());
                }
                if (progress)
                    progress(done);
                if (!r.ok)
                    c = std::make_unique<HttpClient>(port); // a new connection for the next one
            }
        });
    }
    for (auto &t : threads)
        t.join();
    return outcomes;
}

int count(const QList<Outcome> &outcomes, int status)
{
    return int(std::count_if(outcomes.cbegin(), outcomes.cend(),
                             [status](const Outcome &o) { return o.status == status; }));
}

QString statuses(const QList<Outcome> &outcomes)
{
    QMap<int, int> byStatus;
    for (const Outcome &o : outcomes)
        ++byStatus[o.status];
    QStringList parts;
    for (auto it = byStatus.cbegin(); it != byStatus.cend(); ++it)
        parts.append(QStringLiteral("%1 x%2").arg(it.key()).arg(it.value()));
    return parts.join(QStringLiteral(", "));
}

// The database as the test sees it.
struct Books
{
    qint64 balance = 0;
    qint64 ledger = 0;  // the sum of every ledger entry
    qint64 charges = 0; // charge entries
    qint64 usageCost = 0;
};

Books books(const DatabaseConfig &config)
{
    Books b;
    QSqlDatabase db = config.open(QStringLiteral("books"));
    Store store(db, config.kind());
    const qint64 account = store.defaultAccountId();
    b.balance = store.balance(account);
    b.ledger = store.ledgerSum(account);
    QSqlQuery q(db);
    q.exec(QStringLiteral("SELECT COUNT(*) FROM ledger WHERE kind = 'charge'"));
    b.charges = q.next() ? q.value(0).toLongLong() : -1;
    q.exec(QStringLiteral("SELECT COALESCE(SUM(cost), 0) FROM usage_records"));
    b.usageCost = q.next() ? q.value(0).toLongLong() : -1;
    return b;
}

bool charged(const DatabaseConfig &config, const QByteArray &requestId)
{
    QSqlDatabase db = config.open(QStringLiteral("books"));
    QSqlQuery q(db);
    q.prepare(QStringLiteral("SELECT COUNT(*) FROM ledger WHERE kind = 'charge' AND "
                             "request_id = ?"));
    q.addBindValue(QString::fromLatin1(requestId));
    return q.exec() && q.next() && q.value(0).toInt() == 1;
}

QByteArray createKey(const QStringList &where)
{
    QByteArray key;
    const QString err = runCli(QStringList{"keys", "create", "--name", "shared"} + where, &key);
    return err.isEmpty() ? key : QByteArray();
}

// A new key, and `credits` granted to the account, by the command line; empty when either failed.
QByteArray fundedKey(const QStringList &where, const QString &credits)
{
    const QByteArray key = createKey(where);
    if (key.isEmpty() ||
        !runCli(QStringList{"credits", "grant", "--amount", credits} + where).isEmpty())
        return {};
    return key;
}

} // namespace

// The suites' PostgreSQL database; skipped without one (failed with SWITCHYARD_REQUIRE_PG=1).
#define SY_OPEN_PG(var)                                                                            \
    TestDatabase var(QStringLiteral("postgres"));                                                  \
    if (!var.ready()) {                                                                            \
        if (qEnvironmentVariable("SWITCHYARD_REQUIRE_PG") == QLatin1String("1"))                   \
            QFAIL(qPrintable(var.skipReason()));                                                   \
        QSKIP(qPrintable(var.skipReason()));                                                       \
    }

namespace {

} // namespace

class TestInstances : public QObject
{
    Q_OBJECT

    std::vector<std::unique_ptr<ServerProcess>> m_servers;

    // n instances on t's database, with `config`.
    QList<quint16> startInstances(const QStringList &where, const QJsonObject &config, int n)
    {
        QList<quint16> ports;
        for (int i = 0; i < n; ++i) {
            auto s = std::make_unique<ServerProcess>(QStringLiteral(SERVER_BINARY), config, where);
            if (!s->start()) {
                qWarning("instance %d did not start: %s", i, s->log().constData());
                return {};
            }
            ports.append(s->port());
            m_servers.push_back(std::move(s));
        }
        return ports;
    }

    // Polls each port with the request until it answers `status`; the longest wait in ms
    // (-1: one never did within 5 s).
    static qint64 untilEverywhere(const QList<quint16> &ports, int status,
                                  const std::function<HttpReply(HttpClient &)> &request)
    {
        QElapsedTimer t;
        t.start();
        qint64 longest = 0;
        for (quint16 port : ports) {
            for (;;) {
                HttpClient c(port); // a refusal at the head closes its connection
                const HttpReply r = request(c);
                if (r.status == status)
                    break;
                if (t.elapsed() > 5'000) {
                    qWarning("port %u still answers %d: %s", port, r.status, r.body.constData());
                    return -1;
                }
                QThread::msleep(5);
            }
            longest = t.elapsed();
        }
        return longest;
    }

    // 90 requests spread over the instances for a key whose money is worth exactly 50
    // answers. Never more than 50 pass. A refusal in the moment between a settlement's charge
    // and its hold's hand-back (server/SharedState.h) may turn away one the money would just
    // cover when nothing comes after it: what is left is then served to requests asked again,
    // one at a time on each instance in turn, then three more (one to each), which must all be
    // refused. Every outcome: exactly 50 of them 200 when the money held.
    static QList<Outcome> fiftyServed(const QList<quint16> &ports, const QByteArray &key,
                                      const char *what)
    {
        QList<Outcome> outcomes = spread(ports, 90, key, 4);
        qInfo("90 requests on three instances for %s: %s", what, qPrintable(statuses(outcomes)));
        for (int i = 0; count(outcomes, 200) < 50 && i < 6; ++i)
            outcomes += spread({ports[i % 3]}, 1, key, 1);
        return outcomes + spread(ports, 3, key, 1);
    }

private slots:
    void cleanup() { m_servers.clear(); }

    void rateLimitHoldsAcrossInstances()
    {
        SY_OPEN_PG(t);
        const QByteArray key = fundedKey(t.cliArgs(), QStringLiteral("1"));
        QVERIFY(!key.isEmpty());
        const QList<quint16> ports = startInstances(t.cliArgs(), configWith({}, 30), 3);
        QCOMPARE(ports.size(), 3);

        // 90 requests at once, 30 to each instance, for a limit of 30 a minute per key: 30
        // pass (and one more for each two seconds the burst takes: the bucket refills), not 90.
        QElapsedTimer took;
        took.start();
        const QList<Outcome> outcomes = spread(ports, 90, key);
        const qint64 refill = took.elapsed() / 2000 + 1;
        const int passed = count(outcomes, 200);
        qInfo("%d of 90 passed a limit of 30 a minute on three instances in %lld ms (%s)", passed,
              took.elapsed(), qPrintable(statuses(outcomes)));
        QVERIFY2(passed >= 30 && passed <= 30 + refill, qPrintable(statuses(outcomes)));
        QCOMPARE(count(outcomes, 429), 90 - passed);
        for (const Outcome &o : outcomes) {
            QCOMPARE(o.reply.header("x-ratelimit-limit"), QByteArray("30"));
            if (o.status == 429) {
                QCOMPARE(o.reply.header("x-ratelimit-remaining"), QByteArray("0"));
                QVERIFY(o.reply.header("retry-after").toInt() >= 1);
                QCOMPARE(o.reply.json().value("error").toObject().value("type").toString(),
                         QStringLiteral("rate_limit_exceeded"));
            }
        }
        // Only what passed was billed.
        const Books b = books(t.config());
        QCOMPARE(b.balance, Money::kUnitsPerCredit - passed * kPrice);
        QCOMPARE(b.ledger, b.balance);
    }

    void balanceNeverOverdrawnAcrossInstances()
    {
        SY_OPEN_PG(t);
        // Worth exactly 50 answers.
        const QByteArray key = fundedKey(t.cliArgs(), QStringLiteral("0.005"));
        QVERIFY(!key.isEmpty());
        const QList<quint16> ports = startInstances(t.cliArgs(), configWith(), 3);
        QCOMPARE(ports.size(), 3);

        const QList<Outcome> outcomes = fiftyServed(ports, key, "a balance worth 50");
        QVERIFY2(count(outcomes, 200) == 50, qPrintable(statuses(outcomes)));
        QVERIFY(count(outcomes, 402) >= 43);
        for (const Outcome &o : outcomes)
            if (o.status == 402)
                QVERIFY2(o.reply.errorMessage().contains(QLatin1String("Insufficient credits")),
                         qPrintable(o.reply.errorMessage()));
        const Books b = books(t.config());
        QCOMPARE(b.balance, 0);
        QCOMPARE(b.ledger, 0);
        QCOMPARE(b.charges, 50);
        QCOMPARE(b.usageCost, 50 * kPrice);
    }

    // A key's budget holds across instances as the balance does: its holds are in the
    // database with the credit holds, and the balance (far larger) plays no part.
    void keyBudgetHoldsAcrossInstances()
    {
        SY_OPEN_PG(t);
        // A budget worth exactly 50 answers, on a balance worth 10,000.
        QByteArray key;
        QVERIFY(
            runCli(QStringList{"keys", "create", "--name", "budgeted", "--budget", "0.005/day"} +
                       t.cliArgs(),
                   &key)
                .isEmpty());
        QVERIFY(runCli(QStringList{"credits", "grant", "--amount", "1"} + t.cliArgs()).isEmpty());
        const QList<quint16> ports = startInstances(t.cliArgs(), configWith(), 3);
        QCOMPARE(ports.size(), 3);

        const QList<Outcome> outcomes = fiftyServed(ports, key, "a key's budget worth 50");
        QVERIFY2(count(outcomes, 200) == 50, qPrintable(statuses(outcomes)));
        QVERIFY(count(outcomes, 402) >= 43);
        for (const Outcome &o : outcomes)
            if (o.status == 402)
                QCOMPARE(o.reply.json().value("error").toObject().value("code").toString(),
                         QStringLiteral("key_budget_exceeded"));
        const Books b = books(t.config());
        QCOMPARE(b.charges, 50);
        QCOMPARE(b.usageCost, 50 * kPrice);
        QCOMPARE(b.balance, Money::kUnitsPerCredit - 50 * kPrice);
    }

    void changesSeenEverywhereAt250ms_data() { addBackendRows(); }
    void changesSeenEverywhereAt250ms()
    {
        // Three instances on PostgreSQL (LISTEN/NOTIFY); one on SQLite, with the command line
        // beside it (data_version). Each change is made by the command line, another process.
        SY_OPEN_DB(t);
        const bool pg = t.config().isPostgres();
        const QStringList where = t.cliArgs();
        QByteArray token;
        QCOMPARE(
            runCli(QStringList{"tokens", "create", "--name", "ops", "--scopes", "api_keys:read"} +
                       where,
                   &token),
            QString());
        QCOMPARE(runCli(QStringList{"credits", "grant", "--amount", "1"} + where), QString());
        // A long credential cache: only the change feed can make a change show in time.
        const QList<quint16> ports =
            startInstances(where, configWith({{"auth_cache_ms", 600'000}}), pg ? 3 : 1);
        QVERIFY(!ports.isEmpty());

        // A key made now works at once everywhere.
        const QByteArray key = createKey(where);
        QVERIFY(!key.isEmpty());
        for (quint16 port : ports)
            QCOMPARE(HttpClient(port).postJson(kPath, kBody, key).status, 200);
        for (quint16 port : ports)
            QCOMPARE(HttpClient(port).get("/api/v1/api-keys", token).status, 200);

        // Revoked: refused everywhere within 250 ms.
        QCOMPARE(runCli(QStringList{"keys", "revoke", "1"} + where), QString());
        const qint64 keyGone = untilEverywhere(
            ports, 401, [&](HttpClient &c) { return c.postJson(kPath, kBody, key); });
        QCOMPARE(runCli(QStringList{"tokens", "revoke", "1"} + where), QString());
        const qint64 tokenGone = untilEverywhere(
            ports, 401, [&](HttpClient &c) { return c.get("/api/v1/api-keys", token); });
        qInfo("revocations refused on every instance after %lld ms (key) and %lld ms (token)",
              keyGone, tokenGone);
        QVERIFY(keyGone >= 0 && keyGone < 250);
        QVERIFY(tokenGone >= 0 && tokenGone < 250);

        // The command line's writes outlive the servers: they stop, and nothing they wrote
        // afterwards took the revocations back (on SQLite a server that lost its locks did).
        m_servers.clear();
        QSqlDatabase db = t.config().open(QStringLiteral("books"));
        Store store(db, t.config().kind());
        const QList<ApiKeyRecord> keys = store.listApiKeys(store.defaultAccountId());
        QCOMPARE(keys.size(), 1);
        QVERIFY(keys.first().isRevoked());
        QVERIFY(keys.first().lastUsed.isValid()); // the servers' own writes are there too
        const QList<ControlTokenRecord> tokens = store.listControlTokens(store.defaultAccountId());
        QCOMPARE(tokens.size(), 1);
        QVERIFY(tokens.first().isRevoked());
    }

    void killedInstanceLosesNoCharge()
    {
        SY_OPEN_PG(t);
        // Worth 200 answers; an instance not seen for 1 s is gone.
        const QByteArray key = fundedKey(t.cliArgs(), QStringLiteral("0.02"));
        QVERIFY(!key.isEmpty());
        const QList<quint16> ports =
            startInstances(t.cliArgs(), configWith({{"instance_alive_ms", 1000}}), 3);
        QCOMPARE(ports.size(), 3);

        // SIGKILL the first instance once 40 answers came back, in the middle of the burst.
        std::atomic<bool> killed{false};
        const auto victim = pid_t(m_servers.front()->pid());
        const QList<Outcome> outcomes = spread(ports, 120, key, 3, [&](int done) {
            if (done >= 40 && !killed.exchange(true))
                ::kill(victim, SIGKILL);
        });
        QVERIFY(killed);
        m_servers.front()->kill(); // reaped
        qInfo("120 requests, the first instance SIGKILLed after 40 answers: %s",
              qPrintable(statuses(outcomes)));
        // Every answer a client got was charged, once; nothing else was.
        const int paid = count(outcomes, 200);
        for (const Outcome &o : outcomes)
            if (o.status == 200)
                QVERIFY2(charged(t.config(), o.requestId), o.requestId.constData());
        Books b = books(t.config());
        QCOMPARE(b.ledger, b.balance);
        QCOMPARE(b.usageCost, b.charges * kPrice);
        QVERIFY(b.charges >= paid); // the victim may have charged answers it never sent
        QCOMPARE(b.balance, 200 * kPrice - b.charges * kPrice);

        // Its holds stop counting once it is taken for gone: the survivors serve the whole
        // balance, and not one answer more. (A request may be refused while the hold of one
        // just charged on the other instance is on its way back, a few milliseconds: those
        // are asked again.)
        QThread::msleep(1'500);
        const qint64 left = b.balance / kPrice;
        const QList<quint16> survivors = ports.mid(1);
        int served = 0;
        for (int round = 0; round < 20 && served < left; ++round) {
            const QList<Outcome> rest = spread(survivors, int(left) - served, key, 2);
            QCOMPARE(count(rest, 200) + count(rest, 402), int(left) - served);
            served += count(rest, 200);
            QThread::msleep(20);
        }
        QCOMPARE(served, int(left));
        const QList<Outcome> more = spread(survivors, 4, key, 2);
        QCOMPARE(count(more, 402), 4);
        b = books(t.config());
        QCOMPARE(b.balance, 0);
        QCOMPARE(b.ledger, 0);
    }

    void haproxyInFront()
    {
        // The shipped HAProxy example (installer/haproxy.cfg) in front of two instances, with
        // this test's ports: it spreads requests over both, and when one dies its health check
        // takes it out while the other serves everything.
        SY_OPEN_PG(t);
        const QString haproxy = QStandardPaths::findExecutable(
            QStringLiteral("haproxy"), {"/usr/sbin", "/usr/local/sbin", "/usr/bin"});
        if (haproxy.isEmpty())
            QSKIP("haproxy is not installed (bash installer/build-deps.sh --tests)");
        const QByteArray key = fundedKey(t.cliArgs(), QStringLiteral("1"));
        QVERIFY(!key.isEmpty());
        const QList<quint16> ports = startInstances(t.cliArgs(), configWith(), 2);
        QCOMPARE(ports.size(), 2);

        QFile shipped(QStringLiteral(SOURCE_DIR "/installer/haproxy.cfg"));
        QVERIFY(shipped.open(QIODevice::ReadOnly));
        QTcpServer probe; // a free port for the frontend
        QVERIFY(probe.listen(QHostAddress::LocalHost));
        const quint16 front = probe.serverPort();
        probe.close();
        QByteArray cfg;
        int servers = 0;
        for (const QByteArray &line : shipped.readAll().split('\n')) {
            if (line.trimmed().startsWith("bind ")) {
                cfg += "    bind 127.0.0.1:" + QByteArray::number(front) + '\n';
            } else if (line.trimmed().startsWith("server ")) {
                if (servers < ports.size())
                    cfg += "    server i" + QByteArray::number(servers) +
                           " 127.0.0.1:" + QByteArray::number(ports[servers]) + " check\n";
                ++servers;
            } else {
                cfg += line + '\n';
            }
        }
        QCOMPARE(servers, 3);
        QTemporaryFile cfgFile;
        QVERIFY(cfgFile.open());
        cfgFile.write(cfg);
        cfgFile.flush();
        QProcess proxy;
        proxy.setProcessChannelMode(QProcess::MergedChannels);
        proxy.start(haproxy, {"-db", "-f", cfgFile.fileName()});
        QVERIFY(proxy.waitForStarted());
        auto stopProxy = qScopeGuard([&] {
            proxy.terminate();
            if (!proxy.waitForFinished(5'000))
                proxy.kill();
        });
        QTRY_COMPARE_WITH_TIMEOUT(HttpClient(front).get("/healthz").status, 200, 10'000);

        // Spread over both.
        auto served = [&](quint16 port) {
            const QByteArray m = HttpClient(port).get("/metrics").body;
            const qsizetype at =
                m.indexOf("switchyard_requests_total{family=\"address\",status=\"200\"}");
            return at < 0 ? 0 : m.mid(at, m.indexOf('\n', at) - at).split(' ').last().toInt();
        };
        const QList<Outcome> before = spread({front}, 40, key, 4);
        QCOMPARE(count(before, 200), 40);
        QVERIFY2(
            served(ports[0]) > 0 && served(ports[1]) > 0,
            qPrintable(QStringLiteral("%1 and %2").arg(served(ports[0])).arg(served(ports[1]))));

        // One dies: the other serves everything, at once (a refused connection is sent to the
        // other) and after the health check took it out.
        m_servers.front()->kill();
        const QList<Outcome> after = spread({front}, 40, key, 4);
        QVERIFY2(count(after, 200) == 40, qPrintable(statuses(after)));
        QThread::msleep(2'500); // two failed checks a second apart
        const QList<Outcome> later = spread({front}, 40, key, 4);
        QVERIFY2(count(later, 200) == 40, qPrintable(statuses(later)));
        const Books b = books(t.config());
        QCOMPARE(b.balance, Money::kUnitsPerCredit - 120 * kPrice);
    }

    void engineStoppedAndStartedUnderLoad()
    {
        // Its own PostgreSQL, to stop and start: the suites' one stays up.
        if (qEnvironmentVariable("SWITCHYARD_TEST_PG_URL").isEmpty()) {
            if (qEnvironmentVariable("SWITCHYARD_REQUIRE_PG") == QLatin1String("1"))
                QFAIL("SWITCHYARD_TEST_PG_URL is not set");
            QSKIP("no PostgreSQL (SWITCHYARD_TEST_PG_URL)");
        }
        QTemporaryDir dir;
        const QString cluster = dir.filePath(QStringLiteral("pg"));
        const QString ensure = QStringLiteral(SOURCE_DIR "/tests/pg/ensure-postgres.sh");
        const QString stop = QStringLiteral(SOURCE_DIR "/tests/pg/stop-postgres.sh");
        // Starts the cluster (the first time: makes it); its URL, empty when it failed.
        const auto ensureCluster = [&] {
            QProcess p;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.remove(QStringLiteral("SWITCHYARD_TEST_PG_URL"));
            p.setProcessEnvironment(env);
            p.start(QStringLiteral("bash"), {ensure, cluster});
            if (!p.waitForFinished(120'000) || p.exitCode() != 0) {
                qWarning("%s", p.readAllStandardError().constData());
                return QByteArray();
            }
            return p.readAllStandardOutput().trimmed();
        };
        const QByteArray url = ensureCluster();
        QVERIFY(!url.isEmpty());
        auto cleanupCluster = qScopeGuard([&] {
            runProgram(QStringLiteral("bash"), {stop, cluster});
        });
        const QStringList where{"--data-dir", dir.filePath(QStringLiteral("data")), "--database",
                                QString::fromUtf8(url)};
        const QByteArray key = fundedKey(where, QStringLiteral("1"));
        QVERIFY(!key.isEmpty());
        const QList<quint16> ports = startInstances(
            where,
            configWith({{"auth_cache_ms", 600'000}, {"shared_state_timeout_ms", 1000}}, 100'000),
            2);
        QCOMPARE(ports.size(), 2);
        for (quint16 port : ports)
            QCOMPARE(HttpClient(port).postJson(kPath, kBody, key).status, 200);

        // Load on both instances throughout.
        std::atomic<bool> loading{true};
        std::mutex lock;
        QList<Outcome> load;
        std::vector<std::thread> clients;
        for (quint16 port : ports)
            clients.emplace_back([&, port] {
                auto c = std::make_unique<HttpClient>(port);
                while (loading) {
                    const HttpReply r = c->postJson(kPath, kBody, key);
                    {
                        std::lock_guard g(lock);
                        load.append({r.ok ? r.status : 0, r.header("x-request-id"), r});
                    }
                    if (!r.ok)
                        c = std::make_unique<HttpClient>(port);
                    QThread::msleep(2);
                }
            });
        auto stopLoad = qScopeGuard([&] {
            loading = false;
            for (auto &c : clients)
                if (c.joinable())
                    c.join();
        });
        QThread::msleep(300);

        // Stopped: billed requests fail closed, the health check says so, limits go local.
        QCOMPARE(runProgram(QStringLiteral("bash"), {stop, cluster}), QString());
        for (quint16 port : ports) {
            QTRY_COMPARE_WITH_TIMEOUT(HttpClient(port).postJson(kPath, kBody, key).status, 503,
                                      5'000);
            const HttpReply r = HttpClient(port).postJson(kPath, kBody, key);
            QCOMPARE(r.status, 503);
            QCOMPARE(r.json().value("error").toObject().value("code").toString(),
                     QStringLiteral("shared_state_unavailable"));
            QTRY_COMPARE_WITH_TIMEOUT(HttpClient(port).get("/healthz").status, 503, 5'000);
            const QJsonObject health = HttpClient(port).get("/healthz").json();
            QCOMPARE(health.value("shared_state").toObject().value("state").toString(),
                     QStringLiteral("down"));
            const QByteArray metrics = HttpClient(port).get("/metrics").body;
            QVERIFY(metrics.contains("switchyard_shared_state_up 0"));
            QVERIFY(!metrics.contains("switchyard_rate_limit_fallback_total 0\n"));
        }

        // Started again (on the same port): both recover without a restart.
        QCOMPARE(ensureCluster(), url);
        for (quint16 port : ports) {
            QTRY_COMPARE_WITH_TIMEOUT(HttpClient(port).postJson(kPath, kBody, key).status, 200,
                                      15'000);
            QTRY_COMPARE_WITH_TIMEOUT(HttpClient(port).get("/healthz").status, 200, 5'000);
        }
        QThread::msleep(300);
        stopLoad.dismiss();
        loading = false;
        for (auto &c : clients)
            c.join();
        qInfo("under load through the outage: %s", qPrintable(statuses(load)));
        for (const Outcome &o : load)
            QVERIFY2(o.status == 200 || o.status == 503, qPrintable(statuses(load)));
        QVERIFY(count(load, 200) > 0 && count(load, 503) > 0);
        for (const auto &s : m_servers)
            QVERIFY2(s->pid() > 0, "an instance ended"); // no crash

        // Nothing was lost or charged twice: every answer is in the books, and the books add up.
        for (const Outcome &o : load)
            if (o.status == 200)
                QVERIFY2(charged(DatabaseConfig::fromUrl(QString::fromUtf8(url)), o.requestId),
                         o.requestId.constData());
        const Books b = books(DatabaseConfig::fromUrl(QString::fromUtf8(url)));
        QCOMPARE(b.ledger, b.balance);
        QCOMPARE(b.usageCost, b.charges * kPrice);
        QCOMPARE(b.balance, Money::kUnitsPerCredit - b.charges * kPrice);
    }
};

QTEST_GUILESS_MAIN(TestInstances)
#include "tst_instances.moc"
