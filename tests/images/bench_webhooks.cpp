// The webhook outbox measured (server/images/README.md, "Measured"), in-process on SQLite or
// PostgreSQL (--pg URL), against an HTTPS receiver on loopback (tests/common/WebhookReceiver):
//   1. memory and database size with N pending deliveries (not yet due): the dispatcher keeps
//      none of them in memory;
//   2. deliveries per second when all N fall due at once and the receiver answers 200;
//   3. the actual delays between the attempts of one delivery (500, 500, 500, then 200) against
//      the contract's schedule (2, 4, 8 s), unscaled.
// Each figure is run three times; the median and the spread are printed.
//   bench_webhooks [--pending 10000] [--runs 3] [--pg URL] [--no-schedule]

#include "DatabaseService.h"
#include "FakeUpstreamProcess.h"
#include "images/ImageStore.h"
#include "ImagesFamily.h"
#include "Services.h"
#include "WebhookReceiver.h"

#include <algorithm>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

namespace {

qint64 rssKb()
{
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (line.startsWith("VmRSS:"))
            return line.mid(6).trimmed().split(' ').first().toLongLong();
    return 0;
}

qint64 dirBytes(const QString &path)
{
    qint64 total = 0;
    for (const QFileInfo &fi : QDir(path).entryInfoList(QDir::Files))
        total += fi.size();
    return total;
}

double median(QList<double> v)
{
    std::sort(v.begin(), v.end());
    return v.isEmpty() ? 0 : v[v.size() / 2];
}

QString spread(const QList<double> &v, int decimals = 0)
{
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return QStringLiteral("%1 (%2 to %3)")
        .arg(median(v), 0, 'f', decimals)
        .arg(*lo, 0, 'f', decimals)
        .arg(*hi, 0, 'f', decimals);
}

struct Instance
{
    QTemporaryDir dir;
    std::unique_ptr<Services> services;
};

std::unique_ptr<Instance> startInstance(const QString &pg, const WebhookReceiver &receiver,
                                        const FakeUpstreamProcess &fake, double scale)
{
    auto in = std::make_unique<Instance>();
    ServerSettings s = ServerSettings::defaults();
    s.familySections.insert(
        "images",
        QJsonObject{
            {"providers", QJsonObject{{"fake", QJsonObject{{"type", "openai"},
                                                           {"base_url", fake.base("/v1")},
                                                           {"keys", QJsonArray{"sk-bench"}}}}}},
            {"models", QJsonArray{QJsonObject{{"id", "bench-image"}, {"provider", "fake"}}}},
            {"default_model", "bench-image"},
            {"webhooks",
             QJsonObject{{"schedule_scale", scale},
                         {"concurrency", 32},
                         {"fetch", QJsonObject{{"allow_cidrs", QJsonArray{"127.0.0.0/8"}},
                                               {"ca_file", receiver.caFile()}}}}}});
    const DatabaseConfig db = pg.isEmpty() ? DatabaseConfig::sqlite(in->dir.filePath("db.sqlite"))
                                           : DatabaseConfig::fromUrl(pg);
    in->services = std::make_unique<Services>(s, db);
    in->services->start();
    return in;
}

// N completed tasks with a pending delivery each, due at dueMs, written straight to the store.
void seed(Services &services, int n, const QString &url, qint64 dueMs)
{
    // Task ids unique across runs: PostgreSQL runs share one database.
    const QString tag = QString::number(QDateTime::currentMSecsSinceEpoch(), 36);
    DatabaseService &db = services.database();
    const qint64 account = db.defaultAccountId();
    db.write<bool>(
        nullptr,
        [=](Store &s) {
            QSqlQuery q(s.database());
            const qint64 now = QDateTime::currentMSecsSinceEpoch();
            q.prepare("INSERT INTO image_tasks (id, account_id, model, prompt, params, n, status, "
                      "callback_url, base_url, price, held, request_id, created_ms, "
                      "completed_ms) VALUES (?, ?, 'bench-image', 'bench', '{}', 1, 'completed', "
                      "?, 'http://127.0.0.1', 0, 0, 'req', ?, ?)");
            QSqlQuery d(s.database());
            d.prepare("INSERT INTO webhook_deliveries (task_id, account_id, url, status, next_ms, "
                      "created_ms, updated_ms) VALUES (?, ?, ?, 'pending', ?, ?, ?)");
            for (int i = 0; i < n; ++i) {
                const QString id = QStringLiteral("imgtask_bench%1_%2").arg(tag).arg(i);
                for (const QVariant &v :
                     {QVariant(id), QVariant(account), QVariant(url), QVariant(now), QVariant(now)})
                    q.addBindValue(v);
                q.exec();
                for (const QVariant &v : {QVariant(id), QVariant(account), QVariant(url),
                                          QVariant(dueMs), QVariant(now), QVariant(now)})
                    d.addBindValue(v);
                d.exec();
            }
            return true;
        },
        [](const DbResult<bool> &r) {
            if (!r.ok())
                qFatal("seed: %s", qPrintable(r.error));
        });
    db.flush();
}

// The outbox's and the tasks' share of the database: the SQLite files, or PostgreSQL's relation
// sizes (indexes and TOAST included).
double storeMb(Services &services, const QString &dir, bool pg)
{
    if (!pg)
        return dirBytes(dir) / 1048576.0;
    qint64 bytes = 0;
    services.database().read<qint64>(
        nullptr,
        [](Store &s) {
            QSqlQuery q(s.database());
            q.exec(QStringLiteral("SELECT pg_total_relation_size('webhook_deliveries') + "
                                  "pg_total_relation_size('image_tasks')"));
            return q.next() ? q.value(0).toLongLong() : qint64(0);
        },
        [&bytes](const DbResult<qint64> &r) { bytes = r.value; });
    services.database().flush();
    return bytes / 1048576.0;
}

qint64 pending(Services &services)
{
    qint64 n = 0;
    services.database().read<qint64>(
        nullptr, [](Store &s) { return ImageStore::pendingCount(s); },
        [&n](const DbResult<qint64> &r) { n = r.value; });
    services.database().flush();
    return n;
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCommandLineParser p;
    p.addOption({"pending", "deliveries to seed", "N", "10000"});
    p.addOption({"runs", "runs of each figure", "N", "3"});
    p.addOption({"pg", "a PostgreSQL URL instead of SQLite", "URL"});
    p.addOption({"no-schedule", "leave out the unscaled schedule (about 15 s a run)"});
    p.process(app);
    const int n = p.value("pending").toInt();
    const int runs = p.value("runs").toInt();
    const QString pg = p.value("pg");

    WebhookReceiver receiver;
    if (!receiver.start())
        qFatal("receiver: %s", qPrintable(receiver.errorString()));
    FakeUpstreamProcess fake;
    if (!fake.start())
        qFatal("fake upstream did not start");
    printf("bench_webhooks: %s, %d pending, %d runs, %d CPUs\n",
           pg.isEmpty() ? "SQLite" : "PostgreSQL", n, runs, QThread::idealThreadCount());

    QList<double> rssGrowth, dbMb, rate;
    for (int run = 0; run < runs; ++run) {
        auto in = startInstance(pg, receiver, fake, 1.0);
        QTest::qWait(300);
        const qint64 rss0 = rssKb();
        const double mb0 = storeMb(*in->services, in->dir.path(), !pg.isEmpty());
        const qint64 far = QDateTime::currentMSecsSinceEpoch() + 3'600'000;
        seed(*in->services, n, receiver.url(), far);
        QTest::qWait(1500); // the dispatcher polls and finds nothing due
        rssGrowth.append((rssKb() - rss0) / 1024.0);
        dbMb.append(storeMb(*in->services, in->dir.path(), !pg.isEmpty()) - mb0);
        const int before = int(receiver.requests().size());
        QElapsedTimer clock;
        in->services->database().write<bool>(
            nullptr,
            [](Store &s) {
                QSqlQuery q(s.database());
                return q.exec(QStringLiteral("UPDATE webhook_deliveries SET next_ms = 0"));
            },
            [](const DbResult<bool> &) {});
        in->services->database().flush();
        clock.start();
        in->services->family<ImagesFamily>()->wakeDispatcher();
        while (pending(*in->services) > 0 && clock.elapsed() < 600'000)
            QTest::qWait(50);
        const double seconds = clock.elapsed() / 1000.0;
        rate.append((receiver.requests().size() - before) / seconds);
        printf("  run %d: rss +%.1f MiB with %d pending, db %.1f MiB, %.0f deliveries/s\n", run + 1,
               rssGrowth.last(), n, dbMb.last(), rate.last());
        fflush(stdout);
        in->services->stop();
    }
    printf("\n| figure | median (spread) |\n|---|---|\n");
    printf("| RSS growth with %d pending deliveries | %s MiB |\n", n,
           qPrintable(spread(rssGrowth, 1)));
    printf("| %s growth with %d pending deliveries (tasks and outbox rows) | %s MiB |\n",
           pg.isEmpty() ? "SQLite files" : "PostgreSQL relations", n, qPrintable(spread(dbMb, 1)));
    printf("| deliveries per second (receiver answers 200) | %s |\n", qPrintable(spread(rate)));

    if (!p.isSet("no-schedule")) {
        // 500, 500, 500, then 200 on the contract's own schedule: retries after 2, 4, 8 s.
        QList<QList<double>> gaps(3);
        for (int run = 0; run < runs; ++run) {
            auto in = startInstance(pg, receiver, fake, 1.0);
            receiver.script({{500}, {500}, {500}});
            const int first = int(receiver.requests().size());
            seed(*in->services, 1, receiver.url(), 0);
            in->services->family<ImagesFamily>()->wakeDispatcher();
            if (!receiver.waitForRequests(first + 4, 30'000))
                qFatal("the four attempts did not come");
            const auto reqs = receiver.requests();
            for (int i = 0; i < 3; ++i)
                gaps[i].append(reqs[first + i + 1].elapsedMs - reqs[first + i].elapsedMs);
            in->services->stop();
        }
        printf("| retry 1 after (scheduled 2000 ms) | %s ms |\n", qPrintable(spread(gaps[0])));
        printf("| retry 2 after (scheduled 4000 ms) | %s ms |\n", qPrintable(spread(gaps[1])));
        printf("| retry 3 after (scheduled 8000 ms) | %s ms |\n", qPrintable(spread(gaps[2])));
    }
    return 0;
}
