// Measures name, phone and express-label extraction against the project's own labelled set
// tests/address/data/extraction-set.tsv (invented examples; columns described in its header):
// precision, recall and F1 for person names (NameExtractor, every name in the text), phone
// numbers (PhoneExtractor) and each extract-express field (exact match), the share of labels
// whose eight fields are all right, and calls/s in-process on one thread.
//
// With ../shared/data/address/structure-dev.txt present (a measuring stick only; nothing of it is
// copied), it also measures `extract` on those addresses: the share of address characters (any
// label but person, redundant and otherinfo) inside a LOC fragment (recall), the share of LOC
// characters that are address characters (precision), and the addresses covered whole by a single
// fragment.
//
//   eval_extraction [FILE] [--dev STRUCTURE_DEV] [--floor F1] [--verbose]
//
// Exit code 1 when the name F1, the phone F1 or the micro-averaged express F1 is below the floor.
#include "AddressEngine.h"
#include "ExpressExtractor.h"
#include "LocationExtractor.h"
#include "NameExtractor.h"
#include "PhoneExtractor.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QStringList>

#include <array>
#include <cstdio>

namespace {

constexpr int kFields = 8;
constexpr const char *kFieldNames[kFields] = {"person_info",  "phone_info",    "prov_info",
                                              "city_info",    "district_info", "road_info",
                                              "road_no_info", "poi_info"};

struct Case
{
    int line = 0;
    QString text;
    QStringList names;
    QStringList phones;
    std::array<QString, kFields> fields;
};

struct Count
{
    int tp = 0;
    int fp = 0;
    int fn = 0;
    double precision() const { return tp + fp ? double(tp) / (tp + fp) : 1.0; }
    double recall() const { return tp + fn ? double(tp) / (tp + fn) : 1.0; }
    double f1() const
    {
        const double p = precision();
        const double r = recall();
        return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
    }
    void add(const Count &o)
    {
        tp += o.tp;
        fp += o.fp;
        fn += o.fn;
    }
};

QStringList splitList(const QString &s)
{
    return s.isEmpty() ? QStringList() : s.split(u'|');
}

// Multiset comparison of predicted and gold words.
Count compare(QStringList predicted, const QStringList &gold)
{
    Count c;
    for (const QString &g : gold) {
        const qsizetype at = predicted.indexOf(g);
        if (at >= 0) {
            ++c.tp;
            predicted.removeAt(at);
        } else {
            ++c.fn;
        }
    }
    c.fp = int(predicted.size());
    return c;
}

void print(const char *what, const Count &c)
{
    std::printf("%-14s P %.3f  R %.3f  F1 %.3f  (tp %d, fp %d, fn %d)\n", what, c.precision(),
                c.recall(), c.f1(), c.tp, c.fp, c.fn);
}

// `extract` over the labelled development addresses (BIO, one token per line, blank line
// between addresses).
void measureLocations(const AddressEngine &engine, const QString &devPath, bool verbose)
{
    QFile dev(devPath);
    if (!dev.open(QIODevice::ReadOnly | QIODevice::Text)) {
        std::printf("extract vs %s: skipped (file absent)\n", qPrintable(devPath));
        return;
    }
    qint64 addressChars = 0;
    qint64 covered = 0;
    qint64 locChars = 0;
    int addresses = 0;
    int whole = 0;
    QString text;
    QList<bool> isAddress;
    const auto finish = [&] {
        if (text.isEmpty())
            return;
        ++addresses;
        QList<bool> inLoc(text.size(), false);
        const QList<LocationExtractor::Location> found = engine.locationExtractor().extract(text);
        for (const LocationExtractor::Location &l : found) {
            for (qsizetype k = l.start; k < l.end; ++k)
                inLoc[k] = true;
            locChars += l.end - l.start;
        }
        qsizetype first = -1;
        qsizetype last = -1;
        for (qsizetype k = 0; k < text.size(); ++k) {
            if (!isAddress[k])
                continue;
            ++addressChars;
            covered += inLoc[k] ? 1 : 0;
            if (first < 0)
                first = k;
            last = k;
        }
        bool one = false;
        for (const LocationExtractor::Location &l : found)
            one = one || (first >= 0 && l.start <= first && l.end > last);
        whole += one ? 1 : 0;
        if (verbose && !one) {
            QStringList words;
            for (const LocationExtractor::Location &l : found)
                words.append(l.word);
            std::printf("not whole: %s -> %s\n", qPrintable(text), qPrintable(words.join(u" | ")));
        }
        text.clear();
        isAddress.clear();
    };
    while (!dev.atEnd()) {
        const QString line = QString::fromUtf8(dev.readLine()).trimmed();
        if (line.isEmpty()) {
            finish();
            continue;
        }
        const qsizetype sp = line.lastIndexOf(u' ');
        if (sp <= 0)
            continue;
        QString token = line.left(sp);
        if (token == u"_")
            token = u" "_qs; // the corpus writes a space as '_'
        const QString key = line.mid(sp + 1).section(u'-', 1);
        const bool address = key != u"person" && key != u"redundant" && key != u"otherinfo";
        text += token;
        for (qsizetype k = 0; k < token.size(); ++k)
            isAddress.append(address);
    }
    finish();
    const qint64 locAddress = covered; // LOC characters that are address characters
    std::printf("extract vs %s: %d addresses\n", qPrintable(devPath), addresses);
    std::printf("  address characters inside LOC (recall) %.3f, LOC characters that are address "
                "(precision) %.3f, addresses covered whole by one fragment %.3f\n",
                addressChars ? double(covered) / addressChars : 0.0,
                locChars ? double(locAddress) / locChars : 0.0,
                addresses ? double(whole) / addresses : 0.0);
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const AddressEngine engine; // the extractors the endpoints use
    QString path = QStringLiteral(DEFAULT_EXTRACTION_SET);
    QString devPath = QStringLiteral(DEFAULT_STRUCTURE_DEV);
    double floor = 0;
    bool verbose = false;
    const QStringList args = app.arguments().mid(1);
    for (qsizetype i = 0; i < args.size(); ++i) {
        if (args[i] == u"--floor" && i + 1 < args.size())
            floor = args[++i].toDouble();
        else if (args[i] == u"--dev" && i + 1 < args.size())
            devPath = args[++i];
        else if (args[i] == u"--verbose")
            verbose = true;
        else
            path = args[i];
    }
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text)) {
        std::fprintf(stderr, "cannot read %s\n", qPrintable(path));
        return 2;
    }
    QList<Case> cases;
    int lineNo = 0;
    while (!file.atEnd()) {
        ++lineNo;
        QString line = QString::fromUtf8(file.readLine());
        if (line.endsWith(u'\n'))
            line.chop(1);
        if (line.isEmpty() || line.startsWith(u'#'))
            continue;
        const QStringList f = line.split(u'\t');
        if (f.size() != 3 + kFields) {
            std::fprintf(stderr, "%s:%d: expected %d columns, got %lld\n", qPrintable(path), lineNo,
                         3 + kFields, qlonglong(f.size()));
            return 2;
        }
        Case c;
        c.line = lineNo;
        c.text = f[0];
        c.names = splitList(f[1]);
        c.phones = splitList(f[2]);
        for (int k = 0; k < kFields; ++k)
            c.fields[std::size_t(k)] = f[3 + k];
        cases.append(c);
    }

    const NameExtractor &names = engine.nameExtractor();
    const ExpressExtractor &express = engine.expressExtractor();
    Count nameCount;
    Count phoneCount;
    std::array<Count, kFields> fieldCount{};
    int allRight = 0;
    for (const Case &c : std::as_const(cases)) {
        QStringList predictedNames;
        for (const NameExtractor::Match &m : names.extract(c.text))
            predictedNames.append(m.word);
        const Count nc = compare(predictedNames, c.names);
        nameCount.add(nc);
        QStringList predictedPhones;
        for (const PhoneExtractor::Match &m : PhoneExtractor::extract(c.text))
            predictedPhones.append(m.word);
        phoneCount.add(compare(predictedPhones, c.phones));

        const ExpressExtractor::Result r = express.extract(c.text);
        const std::array<QString, kFields> got = {r.person,   r.phone, r.province, r.city,
                                                  r.district, r.road,  r.roadNo,   r.poi};
        bool right = true;
        for (int k = 0; k < kFields; ++k) {
            const QString &g = c.fields[std::size_t(k)];
            const QString &p = got[std::size_t(k)];
            Count &fc = fieldCount[std::size_t(k)];
            if (!g.isEmpty() && p == g)
                ++fc.tp;
            if (!g.isEmpty() && p != g)
                ++fc.fn;
            if (!p.isEmpty() && p != g)
                ++fc.fp;
            if (p != g) {
                right = false;
                if (verbose)
                    std::printf("line %d %s: got '%s' want '%s'  | %s\n", c.line, kFieldNames[k],
                                qPrintable(p), qPrintable(g), qPrintable(c.text));
            }
        }
        if (verbose && (nc.fp || nc.fn))
            std::printf("line %d names: got '%s' want '%s'  | %s\n", c.line,
                        qPrintable(predictedNames.join(u'|')), qPrintable(c.names.join(u'|')),
                        qPrintable(c.text));
        allRight += right ? 1 : 0;
    }

    std::printf("extraction set: %lld cases (%s)\n", qlonglong(cases.size()), qPrintable(path));
    print("names", nameCount);
    print("phones", phoneCount);
    Count micro;
    for (int k = 0; k < kFields; ++k) {
        print(kFieldNames[k], fieldCount[std::size_t(k)]);
        micro.add(fieldCount[std::size_t(k)]);
    }
    print("express (all)", micro);
    std::printf("labels with all eight fields right: %d / %lld (%.3f)\n", allRight,
                qlonglong(cases.size()), cases.isEmpty() ? 0.0 : double(allRight) / cases.size());

    measureLocations(engine, devPath, verbose);

    // Throughput, in-process on this thread, over the whole set (at least ~0.3 s each).
    const auto rate = [&](const char *what, auto &&call) {
        QElapsedTimer timer;
        timer.start();
        qint64 calls = 0;
        while (timer.elapsed() < 300) {
            for (const Case &c : std::as_const(cases))
                call(c.text);
            calls += cases.size();
        }
        std::printf("%-16s %.0f calls/s\n", what, calls * 1000.0 / double(timer.elapsed()));
    };
    rate("extract-name", [&](const QString &t) { return names.extract(t).size(); });
    rate("extract", [&](const QString &t) { return engine.locationExtractor().extract(t).size(); });
    rate("extract-express", [&](const QString &t) { return express.extract(t).person.size(); });

    const double worst = std::min({nameCount.f1(), phoneCount.f1(), micro.f1()});
    if (worst < floor) {
        std::printf("FAIL: lowest F1 %.3f is below the floor %.3f\n", worst, floor);
        return 1;
    }
    return 0;
}
