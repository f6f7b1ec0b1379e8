#include "MemoryTrim.h"

#include <QFile>
#include <QTest>

#include <cstdlib>
#include <unistd.h>
#include <vector>

#ifdef SWITCHYARD_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

// The programs' allocator (app/MemoryTrim.h): the one the build chose is the one malloc reaches,
// with the options the programs set, and release() gives a burst's freed memory back.
class TestMemoryTrim : public QObject
{
    Q_OBJECT

    static qint64 rssBytes()
    {
        QFile f(QStringLiteral("/proc/self/statm"));
        if (!f.open(QIODevice::ReadOnly))
            return -1;
        const QList<QByteArray> fields = f.readAll().split(' ');
        return fields.size() > 1 ? fields[1].toLongLong() * sysconf(_SC_PAGESIZE) : -1;
    }

#ifdef SWITCHYARD_JEMALLOC
    template <class T> static T option(const char *name)
    {
        T value{};
        size_t size = sizeof value;
        if (mallctl(name, &value, &size, nullptr, 0) != 0)
            qFatal("mallctl %s failed", name);
        return value;
    }
#endif

private slots:
    void theChosenAllocatorServesMalloc()
    {
#ifdef SWITCHYARD_JEMALLOC
        QVERIFY(MemoryTrim::jemalloc());
        // malloc itself goes through jemalloc: its count of this thread's bytes moves.
        const auto before = option<uint64_t>("thread.allocated");
        void *p = std::malloc(1 << 20);
        QVERIFY(p);
        const auto after = option<uint64_t>("thread.allocated");
        std::free(p);
        QVERIFY2(after - before >= (1u << 20), "malloc did not reach jemalloc");
        // The options of MemoryTrim.cpp's malloc_conf were read.
        QCOMPARE(option<ssize_t>("opt.dirty_decay_ms"), ssize_t(-1));
        QCOMPARE(option<ssize_t>("opt.muzzy_decay_ms"), ssize_t(0));
#else
        QVERIFY(!MemoryTrim::jemalloc());
#endif
    }

    void releaseGivesABurstBack()
    {
        MemoryTrim::prepare();
        MemoryTrim::release();
        const qint64 idle = rssBytes();
        QVERIFY(idle > 0);
        // 96 MB in blocks of a size the server allocates by the million (a request's strings,
        // its context), every page touched, then all freed: the allocator keeps them.
        constexpr size_t kBlock = 960;
        constexpr size_t kCount = (96u << 20) / kBlock;
        std::vector<char *> blocks;
        blocks.reserve(kCount);
        for (size_t i = 0; i < kCount; ++i) {
            auto *b = static_cast<char *>(std::malloc(kBlock));
            QVERIFY(b);
            b[0] = char(i);
            b[kBlock - 1] = char(i);
            blocks.push_back(b);
        }
        const qint64 peak = rssBytes();
        QVERIFY2(peak - idle > (80 << 20), qPrintable(QString::number(peak - idle)));
        for (char *b : blocks)
            std::free(b);
        std::vector<char *>().swap(blocks);
        MemoryTrim::release();
        const qint64 after = rssBytes();
        qInfo("RSS idle %lld MB, after the burst %lld MB, after release() %lld MB", idle >> 20,
              peak >> 20, after >> 20);
        QVERIFY2(after - idle < (peak - idle) / 8, qPrintable(QStringLiteral("kept %1 of %2 MB")
                                                                  .arg((after - idle) >> 20)
                                                                  .arg((peak - idle) >> 20)));
    }
};

QTEST_GUILESS_MAIN(TestMemoryTrim)
#include "tst_memory_trim.moc"
