// bench_charges: how many charges per second the charge path commits.
//
// Two ways of writing the same charges, row by row, on SQLite and on PostgreSQL:
//   group   N posting threads call DatabaseService::applyLedger (what the server does), each
//           keeping K charges in flight and waiting for their completions; the single writer
//           thread group-commits whatever has queued up (DbWorker::runBatch).
//   direct  N threads, each with its own connection and Store, one transaction per charge
//           (Store::transaction around Store::applyLedger): no group commit.
// Each row gets a fresh database, runs for a fixed time, drains what is in flight, then checks
// that the balance equals the ledger sum and that exactly the charges reported committed are in
// the ledger; it aborts the process if not. A markdown summary puts the rows side by side.
// See tests/bench/README.md.
#include "DatabaseConfig.h"
#include "DatabaseService.h"
#include "Migrations.h"
#include "Store.h"

#include <benchmark/benchmark.h>

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QMutex>
#include <QSemaphore>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QUrl>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr qint64 kSeedUnits = 1'000'000'000'000'000; // 10^6 credits: never runs out
constexpr qint64 kChargeUnits = 3;
constexpr const char *kBenchReason = "bench";

struct Options
{
    double seconds = 2.0;     // measured window per row
    int inflight = 8;         // charges each posting thread keeps in flight (group rows)
    qint64 prefill = 100'000; // ledger rows for the "large ledger" rows; 0: no such rows
    int prefillWriters = 16;  // writers for the "large ledger" rows
    QList<int> writers{1, 4, 16, 64};
    bool direct = true;       // also run the one-transaction-per-charge rows
    bool whatIfIndex = false; // add a plain (kind, request_id) index: measures a schema fix
    QString dir;              // where the SQLite scratch directories go
    QString pgUrl;            // empty: PostgreSQL rows are skipped
};

Options &options()
{
    static Options o;
    return o;
}

[[noreturn]] void die(const QString &message)
{
    std::fflush(stdout);
    std::fprintf(stderr, "\n*** bench_charges: FATAL: %s\n\n", qPrintable(message));
    std::fflush(stderr);
    std::abort();
}

// ---- a fresh database per row ---------------------------------------------------------------

class Scratch
{
public:
    // Throws StoreError.
    explicit Scratch(const QString &backend)
    {
        static int sequence = 0;
        if (backend == u"sqlite") {
            m_dir = std::make_unique<QTemporaryDir>(
                QDir(options().dir).filePath(QStringLiteral("switchyard-bench-XXXXXX")));
            if (!m_dir->isValid())
                throw StoreError("cannot create a scratch directory in " +
                                 options().dir.toStdString());
            m_config = DatabaseConfig::sqlite(m_dir->filePath(QStringLiteral("bench.db")));
            return;
        }
        m_dbName = QStringLiteral("sy_bench_%1_%2")
                       .arg(QCoreApplication::applicationPid())
                       .arg(++sequence);
        admin(QStringLiteral("CREATE DATABASE %1").arg(m_dbName));
        QUrl url(options().pgUrl);
        url.setPath(QLatin1Char('/') + m_dbName);
        m_config = DatabaseConfig::fromUrl(url.toString());
    }

    ~Scratch()
    {
        if (m_dbName.isEmpty())
            return;
        try {
            admin(QStringLiteral("DROP DATABASE IF EXISTS %1 WITH (FORCE)").arg(m_dbName));
        } catch (const std::exception &e) {
            std::fprintf(stderr, "bench_charges: could not drop %s: %s\n", qPrintable(m_dbName),
                         e.what());
        }
    }

    const DatabaseConfig &config() const { return *m_config; }

private:
    static void admin(const QString &sql)
    {
        QSqlDatabase db =
            DatabaseConfig::fromUrl(options().pgUrl).open(QStringLiteral("benchadmin"));
        QSqlQuery q(db);
        if (!q.exec(sql))
            throw StoreError((sql + QStringLiteral(": ") + q.lastError().text()).toStdString());
    }

    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_dbName;
    std::optional<DatabaseConfig> m_config;
};

// Runs body with a Store on a connection of this thread, then closes the connection.
template <class Fn> void withStore(const DatabaseConfig &config, const QString &purpose, Fn body)
{
    QString name;
    {
        QSqlDatabase db = config.open(purpose);
        name = db.connectionName();
        Store store(db, config.kind());
        body(store);
    }
    DatabaseConfig::close(name);
}

void execOrThrow(QSqlQuery &q, const QString &sql)
{
    if (!q.exec(sql))
        throw StoreError(
            (sql.left(60) + QStringLiteral("...: ") + q.lastError().text()).toStdString());
}

// Migrates, grants the starting balance and, if asked, appends `prefill` charge rows to the
// ledger (with the balance moved to match). Returns the account id.
qint64 seed(const DatabaseConfig &config, qint64 prefill)
{
    qint64 account = 0;
    withStore(config, QStringLiteral("benchseed"), [&](Store &s) {
        Migrations::apply(s.database(), config.kind());
        account = s.defaultAccountId();
        if (options().whatIfIndex) {
            // Not the product's schema: what the duplicate check would cost with an index it
            // can use (the migration's ledger_once is partial, WHERE request_id <> '').
            QSqlQuery q(s.database());
            execOrThrow(q, QStringLiteral("CREATE INDEX bench_ledger_kind_request "
                                          "ON ledger(kind, request_id)"));
        }
        s.transaction([&] {
            const ChargeResult r = s.applyLedger(account, QStringLiteral("grant"), kSeedUnits,
                                                 QStringLiteral("bench seed"), QString(), 0);
            if (r.status != ChargeResult::Status::Committed)
                throw StoreError("the seed grant was not committed");
        });
        if (prefill <= 0)
            return;
        s.transaction([&] {
            QSqlQuery q(s.database());
            const QString values =
                QStringLiteral("%1, 'charge', %2, %3 - i * %4, 'prefill', 'prefill-' || i, %5")
                    .arg(account)
                    .arg(-kChargeUnits)
                    .arg(kSeedUnits)
                    .arg(kChargeUnits)
                    .arg(QDateTime::currentMSecsSinceEpoch());
            const QString columns = QStringLiteral(
                "ledger (account_id, kind, amount, balance_after, reason, request_id, created_ms)");
            if (s.isPostgres())
                execOrThrow(q, QStringLiteral("INSERT INTO %1 SELECT %2 FROM "
                                              "generate_series(1, %3) AS g(i)")
                                   .arg(columns, values)
                                   .arg(prefill));
            else
                execOrThrow(q, QStringLiteral("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL "
                                              "SELECT i + 1 FROM c WHERE i < %3) "
                                              "INSERT INTO %1 SELECT %2 FROM c")
                                   .arg(columns, values)
                                   .arg(prefill));
            execOrThrow(q,
                        QStringLiteral("UPDATE accounts SET balance = balance - %1 WHERE id = %2")
                            .arg(prefill * kChargeUnits)
                            .arg(account));
        });
        if (s.isPostgres()) {
            // What autovacuum would have done by the time a real ledger is this large.
            QSqlQuery q(s.database());
            execOrThrow(q, QStringLiteral("ANALYZE"));
        }
    });
    return account;
}

struct Check
{
    qint64 balance = 0;
    qint64 ledgerSum = 0;
    qint64 benchRows = 0;
};

Check inspect(const DatabaseConfig &config, qint64 account)
{
    Check c;
    withStore(config, QStringLiteral("benchverify"), [&](Store &s) {
        c.balance = s.balance(account);
        c.ledgerSum = s.ledgerSum(account);
        QSqlQuery q(s.database());
        execOrThrow(q, QStringLiteral("SELECT COUNT(*) FROM ledger WHERE reason = '%1'")
                           .arg(QLatin1String(kBenchReason)));
        q.next();
        c.benchRows = q.value(0).toLongLong();
    });
    return c;
}

// ---- one measured run ------------------------------------------------------------------------

struct RunResult
{
    qint64 committed = 0;
    qint64 errors = 0;
    QString firstError;
    double seconds = 0;
    quint64 batches = 0; // group rows: writer transactions
    double p50Ms = 0;
    double p99Ms = 0;
};

// What one posting thread owns; outlives the threads and the writer.
struct Poster
{
    explicit Poster(int capacity) : inFlight(capacity) {}
    QSemaphore inFlight;
    std::vector<float> latencyMs; // written by the writer thread (group) or the poster (direct)
};

struct ErrorLog
{
    std::atomic<qint64> count{0};
    QMutex mutex;
    QString first;
    void add(const QString &e)
    {
        if (count.fetch_add(1) == 0) {
            QMutexLocker lock(&mutex);
            first = e;
        }
    }
};

double msSince(Clock::time_point t)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

void percentiles(std::vector<std::unique_ptr<Poster>> &posters, RunResult &r)
{
    std::vector<float> all;
    for (const auto &p : posters)
        all.insert(all.end(), p->latencyMs.begin(), p->latencyMs.end());
    if (all.empty())
        return;
    auto at = [&all](double q) {
        const size_t i = std::min(all.size() - 1, size_t(q * double(all.size())));
        std::nth_element(all.begin(), all.begin() + qsizetype(i), all.end());
        return double(all[i]);
    };
    r.p50Ms = at(0.50);
    r.p99Ms = at(0.99);
}

QString requestId(char mode, int row, int writer, qint64 i)
{
    return QStringLiteral("%1%2-%3-%4").arg(QLatin1Char(mode)).arg(row).arg(writer).arg(i);
}

RunResult runGroup(const DatabaseConfig &config, qint64 account, int writers, int inflight, int row)
{
    RunResult result;
    ErrorLog errors;
    std::atomic<qint64> committed{0};
    std::vector<std::unique_ptr<Poster>> posters;
    for (int w = 0; w < writers; ++w)
        posters.push_back(std::make_unique<Poster>(inflight));

    DatabaseService db(config, 1);
    db.start();
    const quint64 batches0 = db.writerBatches();
    const auto t0 = Clock::now();
    const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(options().seconds));
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
        threads.emplace_back([&, w] {
            Poster &me = *posters[size_t(w)];
            for (qint64 i = 0;; ++i) {
                me.inFlight.acquire();
                const auto posted = Clock::now();
                if (posted >= deadline) {
                    me.inFlight.release();
                    break;
                }
                // Completion runs on the writer thread after COMMIT (context nullptr).
                db.applyLedger(nullptr, account, QStringLiteral("charge"), -kChargeUnits,
                               QLatin1String(kBenchReason), requestId('g', row, w, i), 0,
                               [&, posted, pm = &me](const DbResult<ChargeResult> &r) {
                                   if (!r.ok())
                                       errors.add(r.error);
                                   else if (r.value.status != ChargeResult::Status::Committed)
                                       errors.add(QStringLiteral("charge not committed, status %1")
                                                      .arg(int(r.value.status)));
                                   else {
                                       committed.fetch_add(1, std::memory_order_relaxed);
                                       pm->latencyMs.push_back(float(msSince(posted)));
                                   }
                                   pm->inFlight.release();
                               });
            }
            me.inFlight.acquire(inflight); // every charge of this thread has completed
        });
    }
    for (auto &t : threads)
        t.join();
    result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    result.batches = db.writerBatches() - batches0;
    db.stop();
    result.committed = committed.load();
    result.errors = errors.count.load();
    result.firstError = errors.first;
    percentiles(posters, result);
    return result;
}

RunResult runDirect(const DatabaseConfig &config, qint64 account, int writers, int row)
{
    RunResult result;
    ErrorLog errors;
    std::atomic<qint64> committed{0};
    std::vector<std::unique_ptr<Poster>> posters;
    for (int w = 0; w < writers; ++w)
        posters.push_back(std::make_unique<Poster>(0));
    std::latch connected(writers + 1);
    std::latch go(1);
    Clock::time_point deadline;

    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
        threads.emplace_back([&, w] {
            Poster &me = *posters[size_t(w)];
            bool counted = false;
            try {
                withStore(config, QStringLiteral("benchdirect"), [&](Store &s) {
                    connected.count_down();
                    counted = true;
                    go.wait();
                    for (qint64 i = 0;; ++i) {
                        const auto start = Clock::now();
                        if (start >= deadline)
                            break;
                        try {
                            ChargeResult r;
                            s.transaction([&] {
                                r = s.applyLedger(account, QStringLiteral("charge"), -kChargeUnits,
                                                  QLatin1String(kBenchReason),
                                                  requestId('d', row, w, i), 0);
                            });
                            if (r.status != ChargeResult::Status::Committed) {
                                errors.add(QStringLiteral("charge not committed, status %1")
                                               .arg(int(r.status)));
                                continue;
                            }
                            committed.fetch_add(1, std::memory_order_relaxed);
                            me.latencyMs.push_back(float(msSince(start)));
                        } catch (const std::exception &e) {
                            errors.add(QString::fromUtf8(e.what()));
                        }
                    }
                });
            } catch (const std::exception &e) { // could not connect
                errors.add(QString::fromUtf8(e.what()));
                if (!counted)
                    connected.count_down();
            }
        });
    }
    connected.arrive_and_wait(); // connections are opened outside the measured window
    const auto t0 = Clock::now();
    deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(options().seconds));
    go.count_down();
    for (auto &t : threads)
        t.join();
    result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    result.committed = committed.load();
    result.errors = errors.count.load();
    result.firstError = errors.first;
    percentiles(posters, result);
    return result;
}

// ---- rows, counters and the summary ----------------------------------------------------------

struct Row
{
    QString backend; // sqlite | postgres
    bool group = true;
    int writers = 1;
    qint64 prefill = 0;
    int id = 0;
    QString name() const
    {
        QString n = QStringLiteral("charges/%1/%2/writers:%3")
                        .arg(backend, group ? QStringLiteral("group") : QStringLiteral("direct"))
                        .arg(writers);
        if (prefill > 0)
            n += QStringLiteral("/ledger:%1").arg(prefill);
        if (options().whatIfIndex)
            n += QStringLiteral("/what-if-index");
        return n;
    }
};

struct Measured
{
    Row row;
    RunResult run;
};

std::vector<Measured> &measured()
{
    static std::vector<Measured> m;
    return m;
}

void benchRow(benchmark::State &state, const Row &row)
{
    std::unique_ptr<Scratch> scratch;
    qint64 account = 0;
    try {
        scratch = std::make_unique<Scratch>(row.backend);
        account = seed(scratch->config(), row.prefill);
    } catch (const std::exception &e) {
        state.SkipWithError(("cannot prepare the database: " + std::string(e.what())).c_str());
        return;
    }
    RunResult r;
    for (auto _ : state) {
        r = row.group
                ? runGroup(scratch->config(), account, row.writers, options().inflight, row.id)
                : runDirect(scratch->config(), account, row.writers, row.id);
        state.SetIterationTime(r.seconds);
    }

    // Money is exact: the balance is the ledger sum, and exactly the charges reported committed
    // were written, once each.
    const Check c = inspect(scratch->config(), account);
    const qint64 expected = kSeedUnits - (row.prefill + r.committed) * kChargeUnits;
    if (c.balance != c.ledgerSum || c.benchRows != r.committed || c.balance != expected)
        die(QStringLiteral("%1: balance %2, ledger sum %3, expected %4; ledger rows from this run "
                           "%5, charges reported committed %6")
                .arg(row.name())
                .arg(c.balance)
                .arg(c.ledgerSum)
                .arg(expected)
                .arg(c.benchRows)
                .arg(r.committed));
    if (r.committed == 0)
        die(QStringLiteral("%1: no charge was committed (%2 errors, first: %3)")
                .arg(row.name())
                .arg(r.errors)
                .arg(r.firstError));

    state.counters["charges/s"] =
        benchmark::Counter(double(r.committed), benchmark::Counter::kIsRate);
    state.counters["charges"] = double(r.committed);
    state.counters["errors"] = double(r.errors);
    state.counters["p50_ms"] = r.p50Ms;
    state.counters["p99_ms"] = r.p99Ms;
    if (row.group) {
        state.counters["batches"] = double(r.batches);
        state.counters["per_batch"] = r.batches ? double(r.committed) / double(r.batches) : 0.0;
    }
    if (r.errors > 0)
        std::fprintf(stderr, "bench_charges: %s: %lld errors, first: %s\n", qPrintable(row.name()),
                     static_cast<long long>(r.errors), qPrintable(r.firstError));
    measured().push_back({row, r});
}

void registerRows()
{
    const Options &o = options();
    QStringList backends{QStringLiteral("sqlite")};
    if (o.pgUrl.isEmpty())
        benchmark::RegisterBenchmark("charges/postgres", [](benchmark::State &state) {
            state.SkipWithError("skipped: SWITCHYARD_BENCH_PG_URL is not set "
                                "(postgresql://user@host:port/db; tests/bench/run-all-bench.sh "
                                "starts a throwaway server)");
        })->Iterations(1);
    else
        backends << QStringLiteral("postgres");

    int id = 0;
    for (const QString &backend : backends) {
        QList<Row> rows;
        for (int n : o.writers) {
            rows.append(Row{backend, true, n, 0, 0});
            if (o.direct)
                rows.append(Row{backend, false, n, 0, 0});
        }
        if (o.prefill > 0) {
            rows.append(Row{backend, true, o.prefillWriters, o.prefill, 0});
            if (o.direct)
                rows.append(Row{backend, false, o.prefillWriters, o.prefill, 0});
        }
        for (Row row : rows) {
            row.id = ++id;
            benchmark::RegisterBenchmark(row.name().toStdString().c_str(),
                                         [row](benchmark::State &state) { benchRow(state, row); })
                ->Iterations(1)
                ->UseManualTime()
                ->MeasureProcessCPUTime()
                ->Unit(benchmark::kMillisecond);
        }
    }
}

QString rate(double perSecond)
{
    return QString::number(qRound64(perSecond));
}

void printSummary()
{
    const Options &o = options();
    std::printf("\n## bench_charges summary\n\n");
    QFile loadavg(QStringLiteral("/proc/loadavg"));
    const QByteArray load =
        loadavg.open(QIODevice::ReadOnly) ? loadavg.readLine().trimmed() : QByteArray("?");
    std::printf("%u hardware threads, load average at the end %s; %.1f s per row; %d charges in "
                "flight per posting thread (group rows); SQLite (synchronous=FULL) in %s%s\n\n",
                std::thread::hardware_concurrency(), load.constData(), o.seconds, o.inflight,
                qPrintable(o.dir),
                o.whatIfIndex ? "; WHAT-IF: extra index ledger(kind, request_id), not the "
                                "product schema"
                              : "");
    std::printf(
        "| backend | ledger rows before | writers | group commit charges/s | writer batches "
        "| charges/batch | group p50 / p99 ms | direct (1 tx per charge) charges/s "
        "| direct p50 / p99 ms | direct errors | group / direct |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    auto find = [](const Row &like, bool group) -> const Measured * {
        for (const Measured &m : measured())
            if (m.row.backend == like.backend && m.row.writers == like.writers &&
                m.row.prefill == like.prefill && m.row.group == group)
                return &m;
        return nullptr;
    };
    for (const Measured &g : measured()) {
        if (!g.row.group)
            continue;
        const Measured *d = find(g.row, false);
        const double gr = double(g.run.committed) / g.run.seconds;
        const QString dr =
            d ? rate(double(d->run.committed) / d->run.seconds) : QStringLiteral("-");
        const QString dl =
            d ? QStringLiteral("%1 / %2").arg(d->run.p50Ms, 0, 'f', 2).arg(d->run.p99Ms, 0, 'f', 2)
              : QStringLiteral("-");
        const QString de = d ? QString::number(d->run.errors) : QStringLiteral("-");
        const QString ratio = d && d->run.committed
                                  ? QStringLiteral("%1x").arg(
                                        gr / (double(d->run.committed) / d->run.seconds), 0, 'f', 1)
                                  : QStringLiteral("-");
        std::printf("| %s | %lld | %d | %s | %llu | %.1f | %.2f / %.2f | %s | %s | %s | %s |\n",
                    qPrintable(g.row.backend), static_cast<long long>(g.row.prefill), g.row.writers,
                    qPrintable(rate(gr)), static_cast<unsigned long long>(g.run.batches),
                    g.run.batches ? double(g.run.committed) / double(g.run.batches) : 0.0,
                    g.run.p50Ms, g.run.p99Ms, qPrintable(dr), qPrintable(dl), qPrintable(de),
                    qPrintable(ratio));
    }
    if (o.pgUrl.isEmpty())
        std::printf("\nPostgreSQL rows skipped: SWITCHYARD_BENCH_PG_URL is not set.\n");
    std::printf("\nEvery row verified: balance == ledger sum, and ledger rows == charges reported "
                "committed.\n");
    std::fflush(stdout);
}

// Takes this program's own options out of argv; the rest goes to Google Benchmark.
bool parseOwnOptions(int argc, char **argv, std::vector<char *> &rest)
{
    Options &o = options();
    auto env = [](const char *name) { return qEnvironmentVariable(name); };
    o.pgUrl = env("SWITCHYARD_BENCH_PG_URL");
    o.dir = env("SWITCHYARD_BENCH_DIR");
    if (o.dir.isEmpty())
        o.dir = QDir::tempPath();
    auto number = [](const QString &text, double &target, double min) {
        bool ok = false;
        const double v = text.toDouble(&ok);
        if (!ok || v < min)
            return false;
        target = v;
        return true;
    };
    double v = 0;
    if (const QString s = env("SWITCHYARD_BENCH_SECONDS"); !s.isEmpty() && number(s, v, 0.1))
        o.seconds = v;
    if (const QString s = env("SWITCHYARD_BENCH_INFLIGHT"); !s.isEmpty() && number(s, v, 1))
        o.inflight = int(v);

    rest.push_back(argv[0]);
    for (int i = 1; i < argc; ++i) {
        const QString a = QString::fromLocal8Bit(argv[i]);
        const QString value = a.section(u'=', 1);
        bool ok = true;
        if (a.startsWith(u"--seconds="))
            ok = number(value, v, 0.1) && (o.seconds = v, true);
        else if (a.startsWith(u"--inflight="))
            ok = number(value, v, 1) && (o.inflight = int(v), true);
        else if (a.startsWith(u"--prefill="))
            ok = number(value, v, 0) && (o.prefill = qint64(v), true);
        else if (a.startsWith(u"--writers=")) {
            o.writers.clear();
            for (const QString &n : value.split(u',', Qt::SkipEmptyParts))
                if (const int w = n.toInt(); w > 0 && w <= 1024)
                    o.writers.append(w);
                else
                    ok = false;
            ok = ok && !o.writers.isEmpty();
        } else if (a.startsWith(u"--dir="))
            o.dir = value;
        else if (a.startsWith(u"--pg-url="))
            o.pgUrl = value;
        else if (a == u"--no-direct")
            o.direct = false;
        else if (a == u"--what-if-index")
            o.whatIfIndex = true;
        else if (a == u"--help" || a == u"-h") {
            std::printf(
                "bench_charges [--seconds=S] [--inflight=K] [--writers=1,4,16,64] "
                "[--prefill=ROWS]\n"
                "              [--dir=DIR] [--pg-url=URL] [--no-direct] [--what-if-index]\n"
                "              [--benchmark_... options]\n"
                "Env: SWITCHYARD_BENCH_PG_URL (PostgreSQL rows), SWITCHYARD_BENCH_DIR (SQLite\n"
                "scratch dirs, default the temp dir), SWITCHYARD_BENCH_SECONDS, "
                "SWITCHYARD_BENCH_INFLIGHT.\n"
                "See tests/bench/README.md.\n");
            return false;
        } else {
            rest.push_back(argv[i]);
            continue;
        }
        if (!ok) {
            std::fprintf(stderr, "bench_charges: bad option %s (see --help)\n", argv[i]);
            std::exit(2);
        }
    }
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    std::vector<char *> rest;
    if (!parseOwnOptions(argc, argv, rest))
        return 0;
    int benchArgc = int(rest.size());
    rest.push_back(nullptr);
    benchmark::Initialize(&benchArgc, rest.data());
    if (benchmark::ReportUnrecognizedArguments(benchArgc, rest.data()))
        return 2;
    if (!options().pgUrl.isEmpty()) {
        try {
            std::fprintf(stderr, "bench_charges: PostgreSQL rows on %s\n",
                         qPrintable(DatabaseConfig::fromUrl(options().pgUrl).describe()));
        } catch (const std::exception &e) {
            std::fprintf(stderr, "bench_charges: SWITCHYARD_BENCH_PG_URL: %s\n", e.what());
            return 2;
        }
    } else {
        std::fprintf(stderr, "bench_charges: SWITCHYARD_BENCH_PG_URL is not set: PostgreSQL rows "
                             "are skipped\n");
    }
    registerRows();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    printSummary();
    return 0;
}
