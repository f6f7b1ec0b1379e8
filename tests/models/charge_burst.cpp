// Test helper for tst_sigkill: posts charges from several threads as fast as the writer takes
// them and prints "ok <request id>" for each one the writer reports committed. The test kills
// it with SIGKILL mid-burst and checks the ledger.
#include "DatabaseService.h"

#include <cstdio>
#include <mutex>
#include <QCoreApplication>
#include <QThread>
#include <unistd.h>

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    if (args.size() != 4) {
        std::fprintf(stderr, "usage: charge_burst sqlite:PATH|postgresql://... WRITERS COUNT\n");
        return 2;
    }
    const QString target = args[1];
    const DatabaseConfig config = target.startsWith(u"sqlite:")
                                      ? DatabaseConfig::sqlite(target.mid(7))
                                      : DatabaseConfig::fromUrl(target);
    const int writers = args[2].toInt();
    const int count = args[3].toInt();
    DatabaseService db(config);
    db.start();
    std::mutex outMutex;
    auto say = [&](const QByteArray &line) {
        std::lock_guard lock(outMutex);
        // write(2) straight to the pipe: nothing sits in a stdio buffer when the kill comes.
        [[maybe_unused]] auto n = ::write(1, line.constData(), line.size());
    };
    say("ready\n");
    std::vector<std::unique_ptr<QThread>> threads;
    for (int w = 0; w < writers; ++w) {
        threads.emplace_back(QThread::create([&, w] {
            for (int i = 0; i < count; ++i) {
                const QString id = QStringLiteral("burst-%1-%2").arg(w).arg(i);
                say("post " + id.toLatin1() + "\n");
                db.applyLedger(nullptr, db.defaultAccountId(), "charge", -3, "burst", id,
                               std::numeric_limits<qint64>::min() / 2,
                               [&say, id](const DbResult<ChargeResult> &r) {
                                   if (r.ok() && r.value.status == ChargeResult::Status::Committed)
                                       say("ok " + id.toLatin1() + "\n");
                               });
                if (i % 16 == 0)
                    QThread::usleep(200); // keep the burst going long enough to be interrupted
            }
        }));
        threads.back()->start();
    }
    for (auto &t : threads)
        t->wait();
    db.stop();
    say("done\n");
    return 0;
}
