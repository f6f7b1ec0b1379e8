// Measures the address search in-process and prints the numbers; asserts nothing.
//
// input-search: replays keystrokes, every prefix of every division's name and of its pinyin
// (杭, 杭州, 杭州市, h, ha, han, ...), one complete() call each, and prints p50/p99/max latency.
// search: calls search() on every division's short form (or name), on its pinyin, on a copy with
// one character changed, and prints calls per second for each kind.
//
// Usage: bench_search [--max-names N] [--probe QUERY] [--show QUERY]   (default: every division)

#include "Pinyin.h"
#include "SearchIndex.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace {

qint64 residentKiB()
{
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray &line : f.readAll().split('\n')) {
        if (line.startsWith("VmRSS:"))
            return line.mid(6).trimmed().split(' ').value(0).toLongLong();
    }
    return -1;
}

double percentile(std::vector<qint64> &ns, double p)
{
    if (ns.empty())
        return 0;
    const size_t i = std::min(ns.size() - 1, size_t(p * double(ns.size())));
    std::nth_element(ns.begin(), ns.begin() + qsizetype(i), ns.end());
    return double(ns[i]) / 1000.0;
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    qsizetype maxNames = -1;
    const QStringList args = app.arguments();
    const qsizetype at = args.indexOf(QStringLiteral("--max-names"));
    if (at > 0 && at + 1 < args.size())
        maxNames = args[at + 1].toLongLong();

    QElapsedTimer timer;
    timer.start();
    const Gazetteer &gazetteer = Gazetteer::builtin();
    const Pinyin &pinyin = Pinyin::builtin();
    const double loadMs = double(timer.nsecsElapsed()) / 1e6;
    const qint64 rssBefore = residentKiB();
    const SearchIndex &index = SearchIndex::builtin();
    std::printf("index: %lld entries, %lld keys, built in %.0f ms (gazetteer and pinyin loaded "
                "in %.0f ms); the index adds %lld KiB resident\n",
                qlonglong(index.size()), qlonglong(index.keyCount()), index.buildMs(), loadMs,
                qlonglong(residentKiB() - rssBefore));

    // --show Q: print what search and input-search answer for one query.
    const qsizetype show = args.indexOf(QStringLiteral("--show"));
    if (show > 0 && show + 1 < args.size()) {
        const QString q = args[show + 1];
        for (bool tolerant : {true, false}) {
            std::printf("%s %s:", tolerant ? "search" : "input-search", qPrintable(q));
            const auto hits = tolerant ? index.search(q, 5) : index.complete(q, 10);
            for (const SearchIndex::Hit &h : hits)
                std::printf(" %s(%.2f)", qPrintable(index.entry(h.entry).address), h.score);
            std::printf("\n");
        }
        return 0;
    }
    // --probe Q: time one query 1000 times (to tell a slow query from a busy machine).
    const qsizetype probe = args.indexOf(QStringLiteral("--probe"));
    if (probe > 0 && probe + 1 < args.size()) {
        const QString q = args[probe + 1];
        std::vector<qint64> ns;
        for (int i = 0; i < 1000; ++i) {
            timer.restart();
            index.complete(q, 10);
            ns.push_back(timer.nsecsElapsed());
        }
        std::printf("input-search %s: p50 %.1f us, p99 %.1f us\n", qPrintable(q),
                    percentile(ns, 0.5), percentile(ns, 0.99));
        return 0;
    }

    QStringList names;
    for (const Gazetteer::Division &d : gazetteer.all()) {
        if (!d.placeholder)
            names << (d.shortName.isEmpty() ? d.name : d.shortName);
        if (maxNames > 0 && names.size() >= maxNames)
            break;
    }

    // Keystrokes: the prefixes of each Chinese name and of its pinyin.
    QStringList keystrokes;
    for (const QString &n : names) {
        for (qsizetype i = 1; i <= n.size(); ++i)
            keystrokes << n.first(i);
        const QString py = pinyin.full(n);
        for (qsizetype i = 1; i <= py.size(); ++i)
            keystrokes << py.first(i);
    }
    std::vector<qint64> ns;
    ns.reserve(size_t(keystrokes.size()));
    qsizetype answered = 0;
    for (const QString &k : keystrokes) {
        timer.restart();
        const QList<SearchIndex::Hit> hits = index.complete(k, 10);
        ns.push_back(timer.nsecsElapsed());
        answered += hits.isEmpty() ? 0 : 1;
    }
    std::vector<qsizetype> order(ns.size());
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + std::min<qsizetype>(5, order.size()),
                      order.end(), [&](qsizetype a, qsizetype b) { return ns[a] > ns[b]; });
    for (qsizetype i = 0; i < std::min<qsizetype>(5, order.size()); ++i)
        std::printf("  slow keystroke: %s %.1f us\n", qPrintable(keystrokes[order[i]]),
                    double(ns[order[i]]) / 1000.0);
    const qint64 totalNs = std::accumulate(ns.begin(), ns.end(), qint64(0));
    const double maxUs = double(*std::max_element(ns.begin(), ns.end())) / 1000.0;
    std::printf("input-search: %lld keystrokes (%lld with suggestions), p50 %.1f us, p99 %.1f us, "
                "max %.1f us, %.0f calls/s\n",
                qlonglong(keystrokes.size()), qlonglong(answered), percentile(ns, 0.50),
                percentile(ns, 0.99), maxUs, double(keystrokes.size()) * 1e9 / double(totalNs));

    auto measure = [&](const char *label, const QStringList &queries, const QString &expect) {
        qsizetype top = 0;
        timer.restart();
        for (qsizetype i = 0; i < queries.size(); ++i) {
            const QList<SearchIndex::Hit> hits = index.search(queries[i], 5);
            if (!expect.isNull()) {
                for (const SearchIndex::Hit &h : hits) {
                    if (index.entry(h.entry).name.startsWith(names[i])) {
                        ++top;
                        break;
                    }
                }
            }
        }
        const double s = double(timer.nsecsElapsed()) / 1e9;
        std::printf("search %-10s %6lld queries, %8.0f calls/s, the name in the top 5: %.1f%%\n",
                    label, qlonglong(queries.size()), double(queries.size()) / s,
                    100.0 * double(top) / double(std::max<qsizetype>(1, queries.size())));
    };
    // Every 10th name keeps the run short; typos only in names of 3+ characters (in two, one
    // wrong character leaves too little to tell places apart).
    QStringList sample;
    QStringList pinyinQueries;
    QStringList typoQueries;
    QStringList typoNames;
    for (qsizetype i = 0; i < names.size(); i += 10) {
        const QString &n = names[i];
        sample << n;
        pinyinQueries << pinyin.full(n);
        if (n.size() >= 3) {
            QString typo = n;
            typo[n.size() / 2] = u'口'; // one wrong character in the middle
            typoQueries << typo;
            typoNames << n;
        }
    }
    names = sample;
    measure("chinese", names, QStringLiteral("name"));
    measure("pinyin", pinyinQueries, QStringLiteral("name"));
    names = typoNames;
    measure("1-typo", typoQueries, QStringLiteral("name"));
    std::printf("resident memory now %lld KiB\n", qlonglong(residentKiB()));
    return 0;
}
