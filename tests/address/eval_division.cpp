// Measures DivisionMatcher (the division-code resolver) against the labelled development set
// ../shared/data/address/structure-dev.txt (BIO, one character per line, see
// ../shared/data/README.md). For each address it rebuilds the text and its prov, city and
// district spans, resolves the text, and counts the addresses whose resolved division at that
// level has the labelled name (full name or short form, either side), or was read through a
// former name that is the labelled one (江东区 resolved to 鄞州区: counted apart as "via former").
// Addresses without a label at a level are skipped for that level (and counted).
//
//   eval_division [FILE] [--floor SHARE] [--verbose N]
//
// FILE defaults to $SWITCHYARD_STRUCTURE_DEV, else the compiled-in DEFAULT_STRUCTURE_DEV. Exit
// code 77 (skip) when the file is missing, 1 when the district share is below the floor.
// Nothing of the file is copied into the product: it is a measuring stick.
#include "DivisionMatcher.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QStringList>
#include <QTextStream>

#include <cstdio>

namespace {

struct Labelled
{
    QString text;
    QHash<QString, QString> first; // key -> first span text
};

QList<Labelled> readBio(QFile &file)
{
    QList<Labelled> out;
    Labelled cur;
    QString curKey;
    const auto flush = [&] {
        if (!cur.text.isEmpty())
            out.append(cur);
        cur = Labelled();
        curKey.clear();
    };
    QTextStream in(&file);
    in.setEncoding(QStringConverter::Utf8);
    QString spanText;
    const auto closeSpan = [&] {
        if (!curKey.isEmpty() && !cur.first.contains(curKey))
            cur.first.insert(curKey, spanText);
        curKey.clear();
        spanText.clear();
    };
    while (!in.atEnd()) {
        const QString line = in.readLine();
        if (line.trimmed().isEmpty()) {
            closeSpan();
            flush();
            continue;
        }
        const qsizetype sp = line.lastIndexOf(u' ');
        if (sp <= 0)
            continue;
        const QString token = line.left(sp);
        const QString tag = line.mid(sp + 1).trimmed();
        if (tag.startsWith(u"B-")) {
            closeSpan();
            curKey = tag.mid(2);
            spanText = token;
        } else if (tag.startsWith(u"I-") && curKey == tag.mid(2)) {
            spanText += token;
        } else {
            closeSpan();
        }
        cur.text += token;
    }
    closeSpan();
    flush();
    return out;
}

// The label names the former name the level was read through (江东区 or 江东 for 江东区).
bool sameFormerName(const QString &label, const DivisionMatcher::Mention &m)
{
    if (!m.former || label.isEmpty())
        return false;
    const QString labelShort = Gazetteer::shortForm(label);
    const QString formerShort = Gazetteer::shortForm(m.former->name);
    return label == m.former->name || label == formerShort ||
           (!labelShort.isEmpty() && labelShort == formerShort);
}

bool sameName(const QString &label, const Gazetteer::Division *d, const QString &shownName)
{
    if (!d || label.isEmpty())
        return false;
    const QString labelShort = Gazetteer::shortForm(label);
    for (const QString &n : {shownName, d->name, d->shortName}) {
        if (n.isEmpty())
            continue;
        if (label == n || (!labelShort.isEmpty() && labelShort == n) ||
            (!labelShort.isEmpty() && labelShort == Gazetteer::shortForm(n)))
            return true;
    }
    return false;
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
    int verbose = 0;
    const QStringList args = app.arguments().mid(1);
    for (qsizetype i = 0; i < args.size(); ++i) {
        if (args[i] == u"--floor" && i + 1 < args.size())
            floor = args[++i].toDouble();
        else if (args[i] == u"--verbose" && i + 1 < args.size())
            verbose = args[++i].toInt();
        else
            path = args[i];
    }
    QFile file(path);
    if (path.isEmpty() || !file.open(QIODevice::ReadOnly)) {
        std::printf("SKIP: no labelled set at '%s'\n", qPrintable(path));
        return 77;
    }
    const QList<Labelled> set = readBio(file);
    const DivisionMatcher matcher;

    struct Row
    {
        const char *key;
        Gazetteer::Level level;
        int total = 0, right = 0, skipped = 0, viaFormer = 0;
    };
    Row rows[] = {{"prov", Gazetteer::Level::Province},
                  {"city", Gazetteer::Level::City},
                  {"district", Gazetteer::Level::District}};
    int shown = 0;
    QList<DivisionMatcher::Result> results;
    results.reserve(set.size());
    for (const Labelled &a : set) {
        const DivisionMatcher::Result r = matcher.resolve(a.text);
        results.append(r);
        for (Row &row : rows) {
            const QString label = a.first.value(QString::fromLatin1(row.key));
            if (label.isEmpty()) {
                ++row.skipped;
                continue;
            }
            ++row.total;
            const DivisionMatcher::Mention &m = r.at(row.level);
            const QString shownName = row.level == Gazetteer::Level::City
                                          ? r.cityName()
                                          : (m.division ? m.division->name : QString());
            if (sameName(label, m.division, shownName)) {
                ++row.right;
            } else if (sameFormerName(label, m)) {
                ++row.right;
                ++row.viaFormer;
            } else if (shown < verbose) {
                ++shown;
                std::printf("miss %s: %s | label %s | got %s %s\n", row.key, qPrintable(a.text),
                            qPrintable(label), qPrintable(r.divcode()),
                            qPrintable(m.division ? m.division->name : QStringLiteral("-")));
            }
        }
    }

    // Speed: resolve the whole set again, several rounds.
    QElapsedTimer timer;
    timer.start();
    qint64 calls = 0;
    qint64 resolved = 0;
    for (int round = 0; round < 5; ++round) {
        for (const Labelled &a : set) {
            ++calls;
            resolved += matcher.resolve(a.text).isEmpty() ? 0 : 1;
        }
    }
    const double secs = double(timer.nsecsElapsed()) / 1e9;

    std::printf("division-code vs %s (%lld addresses)\n", qPrintable(path),
                static_cast<long long>(set.size()));
    std::printf("%-9s %8s %8s %8s %8s %11s\n", "level", "labelled", "right", "share", "skipped",
                "via former");
    for (const Row &row : rows)
        std::printf("%-9s %8d %8d %8.4f %8d %11d\n", row.key, row.total, row.right,
                    row.total ? double(row.right) / row.total : 0.0, row.skipped, row.viaFormer);
    std::printf("resolved: %lld of %lld calls\n", static_cast<long long>(resolved),
                static_cast<long long>(calls));
    std::printf("speed: %.0f calls/s (%lld calls, mean text %.1f chars)\n", double(calls) / secs,
                static_cast<long long>(calls), [&] {
                    qint64 n = 0;
                    for (const Labelled &a : set)
                        n += a.text.size();
                    return set.isEmpty() ? 0.0 : double(n) / double(set.size());
                }());
    const double district = rows[2].total ? double(rows[2].right) / rows[2].total : 0.0;
    if (district < floor) {
        std::printf("FAIL: district share %.4f below the floor %.4f\n", district, floor);
        return 1;
    }
    return 0;
}
