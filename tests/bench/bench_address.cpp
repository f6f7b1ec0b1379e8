// bench_address: calls per second of every served address endpoint, in-process on one thread,
// through AddressApi::call (the exact code POST /v1/address/{name} runs, minus HTTP and billing)
// with one AddressEngine, as one server has. Request bodies: tests/bench/address/requests.json
// (each body of an endpoint in turn). Also prints the process's memory before and after every
// engine index is built, and what a second engine in the same process adds (two Services in one
// process, as tests run them: the process-wide tables are shared, the engines are not). A
// benchmark, not a test: see tests/bench/README.md.
//
//   bench_address [--requests FILE] [Google Benchmark flags, e.g. --benchmark_min_time=2s]
#include "AddressApi.h"
#include "AddressEngine.h"

#include <benchmark/benchmark.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdio>
#include <cstring>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string>
#include <vector>

namespace {

// Resident memory in KiB (Linux), 0 elsewhere.
long rssKiB()
{
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray &line : f.readAll().split('\n')) {
        if (line.startsWith("VmRSS:"))
            return line.mid(6).trimmed().split(' ').value(0).toLong();
    }
    return 0;
}

// Heap bytes in use (glibc), 0 elsewhere: unlike RSS, it does not hide what reuses freed memory.
double heapMiB()
{
#ifdef __GLIBC__
    return double(mallinfo2().uordblks) / (1024.0 * 1024.0);
#else
    return 0;
#endif
}

void runEndpoint(benchmark::State &state, const AddressEngine &engine, const QString &endpoint,
                 const std::vector<QJsonObject> &bodies)
{
    size_t i = 0;
    qint64 failures = 0;
    for (auto _ : state) {
        const AddressApi::Reply r = AddressApi::call(engine, endpoint, bodies[i]);
        failures += r.ok() ? 0 : 1;
        benchmark::DoNotOptimize(r.body);
        i = (i + 1) % bodies.size();
    }
    state.SetItemsProcessed(state.iterations());
    state.counters["failed"] = double(failures);
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QString path = QStringLiteral(SWITCHYARD_ADDRESS_REQUESTS);
    std::vector<char *> args;
    for (int i = 0; i < argc; ++i) {
        if (std::strcmp(argv[i], "--requests") == 0 && i + 1 < argc)
            path = QString::fromLocal8Bit(argv[++i]);
        else
            args.push_back(argv[i]);
    }
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        std::fprintf(stderr, "bench_address: cannot read %s\n", qPrintable(path));
        return 2;
    }
    const QJsonObject requests = QJsonDocument::fromJson(file.readAll()).object();

    // Build every engine index first, so the timings are of warm calls and the memory figure
    // is the engine's.
    const auto warmUp = [&requests](const AddressEngine &engine) {
        for (const QString &endpoint : AddressApi::endpoints()) {
            for (const QJsonValue &body : requests.value(endpoint).toArray())
                AddressApi::call(engine, endpoint, body.toObject());
        }
    };
    const long before = rssKiB();
    const double heapBefore = heapMiB();
    QElapsedTimer warm;
    warm.start();
    const AddressEngine engine;
    warmUp(engine);
    std::printf("engine warm-up: %lld ms, RSS %.1f MiB -> %.1f MiB (+%.1f MiB), heap +%.1f MiB\n",
                qint64(warm.elapsed()), before / 1024.0, rssKiB() / 1024.0,
                (rssKiB() - before) / 1024.0, heapMiB() - heapBefore);
    {
        const long first = rssKiB();
        const double heapFirst = heapMiB();
        warm.restart();
        const AddressEngine second;
        warmUp(second);
        std::printf("second engine: %lld ms, RSS +%.1f MiB, heap +%.2f MiB\n",
                    qint64(warm.elapsed()), (rssKiB() - first) / 1024.0, heapMiB() - heapFirst);
    }

    for (const QString &endpoint : AddressApi::endpoints()) {
        std::vector<QJsonObject> bodies;
        for (const QJsonValue &body : requests.value(endpoint).toArray())
            bodies.push_back(body.toObject());
        if (bodies.empty()) {
            std::printf("no request bodies for %s in %s: not measured\n", qPrintable(endpoint),
                        qPrintable(path));
            continue;
        }
        const std::string name = "address/" + endpoint.toStdString();
        benchmark::RegisterBenchmark(name.c_str(),
                                     [&engine, endpoint, bodies](benchmark::State &state) {
                                         runEndpoint(state, engine, endpoint, bodies);
                                     });
    }
    int n = int(args.size());
    benchmark::Initialize(&n, args.data());
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
