// seed_usage DATA_DIR|URL COUNT: adds COUNT usage records (one key, two models, a meter on every
// fifth, times a second apart) to the default account of a Switchyard database, in
// transactions of 10,000, for csv-export-bench.sh. The schema must exist (run any
// switchyard-server command on the database first).
#include "DatabaseConfig.h"
#include "Store.h"

#include <cstdio>
#include <QCoreApplication>
#include <QElapsedTimer>

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    if (argc != 3) {
        std::fprintf(stderr, "usage: seed_usage DATA_DIR|postgresql://... COUNT\n");
        return 2;
    }
    const QString where = QString::fromLocal8Bit(argv[1]);
    const qint64 count = QByteArray(argv[2]).toLongLong();
    const DatabaseConfig config =
        where.startsWith(QLatin1String("postgres"))
            ? DatabaseConfig::fromUrl(where)
            : DatabaseConfig::sqlite(where + QStringLiteral("/switchyard.db"));
    Store store(config.open(QStringLiteral("seed")), config.kind());
    const qint64 account = store.defaultAccountId();
    const QDateTime start = QDateTime::currentDateTimeUtc().addSecs(-count);
    QElapsedTimer timer;
    timer.start();
    for (qint64 done = 0; done < count;) {
        store.transaction([&] {
            for (int i = 0; i < 10'000 && done < count; ++i, ++done) {
                UsageRecord u;
                u.accountId = account;
                u.keyId = 1;
                u.time = start.addSecs(done);
                u.endpoint = QStringLiteral("/v1/chat/completions");
                u.model = done % 2 ? QStringLiteral("vendorB-5.4") : QStringLiteral("vendorA-x, y");
                u.inputTokens = 100 + done % 1000;
                u.outputTokens = 20;
                u.cost = 123'456 + done;
                u.status = 200;
                u.latencyMs = 42;
                u.requestId = QStringLiteral("req_%1").arg(done);
                if (done % 5 == 0)
                    u.setMeter(QStringLiteral("characters"), done);
                store.insertUsage(u);
            }
        });
    }
    std::fprintf(stderr, "seed_usage: %lld records in %.1f s\n", count, timer.elapsed() / 1000.0);
    return 0;
}
