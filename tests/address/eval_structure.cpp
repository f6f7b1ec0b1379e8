// Measures StructureParser (POST /v1/address/structure) against the labelled development set
// ../shared/data/address/structure-dev.txt (BIO, one character or digit run per line, see
// ../shared/data/README.md). For every key it prints the gold and predicted span counts and the
// precision, recall and F1 over exact spans (key, start, end); then the share of addresses whose
// spans are all right, and the in-process throughput (parse calls/s over the set, repeated for
// about two seconds). Speed is printed, never asserted.
//
//   eval_structure [FILE] [--floor F1] [--errors N] [--key KEY]
//
// --floor fails (exit 1) when the F1 of prov, city, district, town, road or roadNo is below it;
// --errors prints N mislabelled addresses (only those wrong on KEY with --key). FILE defaults to
// $SWITCHYARD_STRUCTURE_DEV, else the compiled-in DEFAULT_STRUCTURE_DEV; exit code 77 (skip)
// when it is missing. Nothing of the file is copied into the product: it is a measuring stick.
#include "AddressEngine.h"
#include "StructureParser.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QSet>
#include <QTextStream>

#include <cstdio>

namespace {

struct Span
{
    QString key;
    qsizetype start = 0;
    qsizetype end = 0;
    bool operator==(const Span &o) const = default;
};

size_t qHash(const Span &s, size_t seed = 0)
{
    return qHashMulti(seed, s.key, s.start, s.end);
}

struct Labelled
{
    QString text;
    QList<Span> spans;
};

QList<Labelled> readBio(QFile &file, QSet<QString> *unknownKeys)
{
    QList<Labelled> out;
    Labelled cur;
    Span open;
    bool isOpen = false;
    const auto close = [&] {
        if (isOpen)
            cur.spans.append(open);
        isOpen = false;
    };
    QTextStream in(&file);
    in.setEncoding(QStringConverter::Utf8);
    while (!in.atEnd()) {
        const QString line = in.readLine();
        if (line.trimmed().isEmpty()) {
            close();
            if (!cur.text.isEmpty())
                out.append(cur);
            cur = Labelled();
            continue;
        }
        const qsizetype sp = line.lastIndexOf(u' ');
        if (sp <= 0)
            continue;
        const QString token = line.left(sp);
        const QString tag = line.mid(sp + 1).trimmed();
        const QString raw = tag.mid(2);
        QString key = StructureParser::canonicalKey(raw);
        if (tag.size() > 2 && key.isEmpty()) {
            unknownKeys->insert(raw);
            key = raw;
        }
        const qsizetype start = cur.text.size();
        cur.text += token;
        if (tag.startsWith(u"B-") || (tag.startsWith(u"I-") && (!isOpen || open.key != key))) {
            close();
            open = {key, start, cur.text.size()};
            isOpen = true;
        } else if (tag.startsWith(u"I-")) {
            open.end = cur.text.size();
        } else {
            close();
        }
    }
    close();
    if (!cur.text.isEmpty())
        out.append(cur);
    return out;
}

QString show(const QString &text, const QList<Span> &spans)
{
    QStringList parts;
    for (const Span &s : spans)
        parts << s.key + u'=' + text.mid(s.start, s.end - s.start);
    return parts.join(u' ');
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QString path = qEnvironmentVariable("SWITCHYARD_STRUCTURE_DEV");
#ifdef DEFAULT_STRUCTURE_DEV
    if (path.isEmpty())
        path = QStringLiteral(DEFAULT_STRUCTURE_DEV);
#endif
    double floor = 0;
    int errors = 0;
    QString errorKey;
    const QStringList args = app.arguments().mid(1);
    for (qsizetype i = 0; i < args.size(); ++i) {
        if (args[i] == u"--floor" && i + 1 < args.size())
            floor = args[++i].toDouble();
        else if (args[i] == u"--errors" && i + 1 < args.size())
            errors = args[++i].toInt();
        else if (args[i] == u"--key" && i + 1 < args.size())
            errorKey = StructureParser::canonicalKey(args[++i]);
        else
            path = args[i];
    }
    QFile file(path);
    if (path.isEmpty() || !file.open(QIODevice::ReadOnly)) {
        std::printf("SKIP: no labelled set at '%s'\n", qPrintable(path));
        return 77;
    }
    QSet<QString> unknownKeys;
    const QList<Labelled> set = readBio(file, &unknownKeys);

    QElapsedTimer buildTimer;
    buildTimer.start();
    const AddressEngine engine;
    const StructureParser &parser = engine.structureParser();
    parser.parse(u"浙江省杭州市");
    const double buildMs = double(buildTimer.nsecsElapsed()) / 1e6;

    struct Count
    {
        int gold = 0, predicted = 0, right = 0;
    };
    QHash<QString, Count> counts;
    int allRight = 0;
    int shown = 0;
    for (const Labelled &a : set) {
        QList<Span> predicted;
        for (const StructureParser::Segment &s : parser.parse(a.text))
            predicted.append({s.key, s.start, s.end});
        const QSet<Span> gold(a.spans.cbegin(), a.spans.cend());
        const QSet<Span> got(predicted.cbegin(), predicted.cend());
        bool keyWrong = false;
        for (const Span &s : a.spans) {
            ++counts[s.key].gold;
            if (got.contains(s))
                ++counts[s.key].right;
            else if (s.key == errorKey)
                keyWrong = true;
        }
        for (const Span &s : predicted) {
            ++counts[s.key].predicted;
            if (!gold.contains(s) && s.key == errorKey)
                keyWrong = true;
        }
        const bool right = gold == got;
        allRight += right ? 1 : 0;
        if (!right && shown < errors && (errorKey.isEmpty() || keyWrong)) {
            ++shown;
            std::printf("gold: %s\ngot:  %s\n\n", qPrintable(show(a.text, a.spans)),
                        qPrintable(show(a.text, predicted)));
        }
    }

    // Speed: parse the whole set in rounds for about two seconds.
    QElapsedTimer timer;
    timer.start();
    qint64 calls = 0;
    qint64 segments = 0;
    while (timer.elapsed() < 2000) {
        for (const Labelled &a : set) {
            segments += parser.parse(a.text).size();
            ++calls;
        }
    }
    const double secs = double(timer.nsecsElapsed()) / 1e9;

    std::printf("structure vs %s (%lld addresses)\n", qPrintable(path),
                static_cast<long long>(set.size()));
    std::printf("%-10s %6s %6s %6s %7s %7s %7s\n", "key", "gold", "pred", "right", "prec", "recall",
                "F1");
    auto f1Of = [](const Count &c) {
        const double p = c.predicted ? double(c.right) / c.predicted : 0;
        const double r = c.gold ? double(c.right) / c.gold : 0;
        return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
    };
    Count total;
    QStringList keys = StructureParser::keys();
    for (const QString &k : unknownKeys)
        keys.append(k);
    for (const QString &k : keys) {
        const Count c = counts.value(k);
        total.gold += c.gold;
        total.predicted += c.predicted;
        total.right += c.right;
        if (c.gold == 0 && c.predicted == 0)
            continue;
        std::printf("%-10s %6d %6d %6d %7.4f %7.4f %7.4f\n", qPrintable(k), c.gold, c.predicted,
                    c.right, c.predicted ? double(c.right) / c.predicted : 0.0,
                    c.gold ? double(c.right) / c.gold : 0.0, f1Of(c));
    }
    std::printf("%-10s %6d %6d %6d %7.4f %7.4f %7.4f\n", "(all)", total.gold, total.predicted,
                total.right, total.predicted ? double(total.right) / total.predicted : 0.0,
                total.gold ? double(total.right) / total.gold : 0.0, f1Of(total));
    std::printf("addresses entirely right: %d of %lld (%.4f)\n", allRight,
                static_cast<long long>(set.size()),
                set.isEmpty() ? 0.0 : double(allRight) / set.size());
    std::printf("speed: %.0f calls/s in-process, one thread (%lld calls, %lld segments; first "
                "use %.0f ms)\n",
                double(calls) / secs, static_cast<long long>(calls),
                static_cast<long long>(segments), buildMs);
    int failed = 0;
    for (const char *k : {"prov", "city", "district", "town", "road", "roadNo"}) {
        const double f1 = f1Of(counts.value(QLatin1String(k)));
        if (f1 < floor) {
            std::printf("FAIL: %s F1 %.4f below the floor %.4f\n", k, f1, floor);
            ++failed;
        }
    }
    return failed ? 1 : 0;
}
