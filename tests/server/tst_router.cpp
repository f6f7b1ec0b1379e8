// Router: what a request reaches, and that the segment tree decides as the linear scan in
// registration order did (a reference scan here, over random route tables and paths).
#include "Router.h"

#include <QRandomGenerator>
#include <QRegularExpression>
#include <QTest>

namespace {

RouteSpec route(const char *method, const QString &pattern)
{
    RouteSpec r;
    r.method = method;
    r.pattern = pattern;
    r.family = pattern; // identifies the route in the checks
    return r;
}

// The rule the router documents, one route at a time in registration order.
struct Reference
{
    struct Item
    {
        QByteArray method;
        QStringList segments;
        QString pattern;
    };
    QList<Item> items;

    void add(const char *method, const QString &pattern)
    {
        items.append({method, pattern.split(u'/', Qt::SkipEmptyParts), pattern});
    }
    // An independent reading of the rule: the pattern as a regular expression over the path
    // with its empty segments dropped.
    static bool matches(const QStringList &pattern, const QStringList &path,
                        QHash<QString, QString> *params)
    {
        QString re = QStringLiteral("^");
        QStringList names;
        for (qsizetype i = 0; i < pattern.size(); ++i) {
            const QString &p = pattern[i];
            if (i == pattern.size() - 1 && p.endsWith(QLatin1String("+}"))) {
                re += QStringLiteral("/(.+)");
                names.append(p.mid(1, p.size() - 3));
            } else if (p.startsWith(u'{') && p.endsWith(u'}')) {
                re += QStringLiteral("/([^/]+)");
                names.append(p.mid(1, p.size() - 2));
            } else {
                re += u'/' + QRegularExpression::escape(p);
            }
        }
        const QRegularExpressionMatch m = QRegularExpression(re + u'$').match(
            path.isEmpty() ? QString() : u'/' + path.join(u'/'));
        if (!m.hasMatch())
            return false;
        for (qsizetype i = 0; i < names.size(); ++i)
            params->insert(names[i], m.captured(int(i) + 1));
        return true;
    }
    // "pattern|params" of the route reached, or "405:methods", or "404".
    QString decide(const QByteArray &method, const QString &path) const
    {
        const QStringList segments = path.split(u'/', Qt::SkipEmptyParts);
        QStringList allowed;
        for (const Item &it : items) {
            QHash<QString, QString> params;
            if (!matches(it.segments, segments, &params))
                continue;
            if (it.method == method || (method == "HEAD" && it.method == "GET"))
                return describe(it.pattern, params);
            allowed.append(QString::fromLatin1(it.method));
        }
        return allowed.isEmpty() ? QStringLiteral("404")
                                 : QStringLiteral("405:") + allowed.join(u',');
    }
    static QString describe(const QString &pattern, const QHash<QString, QString> &params)
    {
        QStringList keys = params.keys();
        keys.sort();
        QString out = pattern + u'|';
        for (const QString &k : keys)
            out += k + u'=' + params.value(k) + u';';
        return out;
    }
};

QString decide(const Router &router, const QByteArray &method, const QString &path)
{
    const Router::Match m = router.match(method, path);
    if (m.route)
        return Reference::describe(m.route->pattern, m.params);
    return m.allowedMethods.isEmpty() ? QStringLiteral("404")
                                      : QStringLiteral("405:") + m.allowedMethods.join(u',');
}

} // namespace

class TestRouter : public QObject
{
    Q_OBJECT

private slots:
    void literalsParamsAndRest()
    {
        Router r;
        r.add(route("GET", "/healthz"));
        r.add(route("POST", "/v1/address/{name}"));
        r.add(route("GET", "/api/v1/api-keys/{id}"));
        r.add(route("DELETE", "/api/v1/api-keys/{id}"));
        r.add(route("GET", "/v1/social-media/data/{path+}"));
        r.add(route("GET", "/"));

        QCOMPARE(decide(r, "GET", "/healthz"), QStringLiteral("/healthz|"));
        QCOMPARE(decide(r, "HEAD", "/healthz"), QStringLiteral("/healthz|"));
        QCOMPARE(decide(r, "GET", "/"), QStringLiteral("/|"));
        QCOMPARE(decide(r, "POST", "/v1/address/transfer-coord"),
                 QStringLiteral("/v1/address/{name}|name=transfer-coord;"));
        QCOMPARE(decide(r, "DELETE", "/api/v1/api-keys/42"),
                 QStringLiteral("/api/v1/api-keys/{id}|id=42;"));
        QCOMPARE(decide(r, "PUT", "/api/v1/api-keys/42"), QStringLiteral("405:GET,DELETE"));
        QCOMPARE(decide(r, "GET", "/v1/social-media/data/tiktok/app/v3/fetch"),
                 QStringLiteral("/v1/social-media/data/{path+}|path=tiktok/app/v3/fetch;"));
        // The rest takes one segment or more, never none; empty segments are dropped.
        QCOMPARE(decide(r, "GET", "/v1/social-media/data"), QStringLiteral("404"));
        QCOMPARE(decide(r, "GET", "/v1/social-media/data//a//b/"),
                 QStringLiteral("/v1/social-media/data/{path+}|path=a/b;"));
        QCOMPARE(decide(r, "GET", "//healthz/"), QStringLiteral("/healthz|"));
        QCOMPARE(decide(r, "POST", "/v1/address"), QStringLiteral("404"));
        QCOMPARE(decide(r, "POST", "/v1/address/a/b"), QStringLiteral("404"));
        QCOMPARE(decide(r, "GET", "/HEALTHZ"), QStringLiteral("404")); // segments are exact

        QCOMPARE(r.anyForPath("/api/v1/api-keys/7")->pattern,
                 QStringLiteral("/api/v1/api-keys/{id}"));
        QVERIFY(!r.anyForPath("/nothing/here"));
    }

    // A GET route that refuses HEAD: the path answers 405 and names GET, before any handler.
    void headRefused()
    {
        Router r;
        RouteSpec paid = route("GET", "/paid/{x+}");
        paid.head = false;
        r.add(std::move(paid));
        r.add(route("POST", "/paid/{x+}"));
        r.add(route("GET", "/free"));
        QCOMPARE(decide(r, "GET", "/paid/a/b"), QStringLiteral("/paid/{x+}|x=a/b;"));
        QCOMPARE(decide(r, "HEAD", "/paid/a/b"), QStringLiteral("405:GET,POST"));
        QCOMPARE(decide(r, "HEAD", "/free"), QStringLiteral("/free|"));
    }

    void firstRegisteredWins()
    {
        // A placeholder registered before a literal takes the paths both match.
        Router r;
        r.add(route("GET", "/v1/models/{id}"));
        r.add(route("GET", "/v1/models/list"));
        r.add(route("POST", "/v1/models/list"));
        QCOMPARE(decide(r, "GET", "/v1/models/list"), QStringLiteral("/v1/models/{id}|id=list;"));
        QCOMPARE(decide(r, "POST", "/v1/models/list"), QStringLiteral("/v1/models/list|"));
        QCOMPARE(r.anyForPath("/v1/models/list")->pattern, QStringLiteral("/v1/models/{id}"));

        // A literal registered first wins over the placeholder and over a rest.
        Router s;
        s.add(route("GET", "/a/b"));
        s.add(route("GET", "/a/{x}"));
        s.add(route("GET", "/{y+}"));
        QCOMPARE(decide(s, "GET", "/a/b"), QStringLiteral("/a/b|"));
        QCOMPARE(decide(s, "GET", "/a/c"), QStringLiteral("/a/{x}|x=c;"));
        QCOMPARE(decide(s, "GET", "/a/b/c"), QStringLiteral("/{y+}|y=a/b/c;"));
        QCOMPARE(decide(s, "POST", "/a/b"), QStringLiteral("405:GET,GET,GET"));
    }

    void sameAsLinearScan()
    {
        // Random tables over a small alphabet, so that overlaps are common.
        QRandomGenerator rng(20261126);
        // Literals that sort around each other ("a" < "aa" < "ab" < "b"), so that a node's
        // sorted children are inserted before, between and after one another.
        const QStringList words{"b", "a", "v1", "ab", "aa", "{x}", "{y}", "{r+}"};
        const int literals = 5;
        const QList<QByteArray> methods{"GET", "POST", "DELETE", "HEAD"};
        int compared = 0, found = 0;
        for (int table = 0; table < 200; ++table) {
            Router router;
            Reference ref;
            const int routes = 1 + int(rng.bounded(12));
            for (int i = 0; i < routes; ++i) {
                QString pattern;
                const int n = int(rng.bounded(4));
                for (int k = 0; k < n; ++k)
                    pattern += u'/' + words[int(rng.bounded(words.size()))];
                if (pattern.isEmpty())
                    pattern = QStringLiteral("/");
                const QByteArray method = methods[int(rng.bounded(3))];
                router.add(route(method.constData(), pattern));
                ref.add(method.constData(), pattern);
            }
            for (int p = 0; p < 50; ++p) {
                QString path;
                const int n = int(rng.bounded(5));
                for (int k = 0; k < n; ++k)
                    path += u'/' + words[int(rng.bounded(literals))]; // literals only
                if (rng.bounded(4) == 0)
                    path += u'/';
                const QByteArray method = methods[int(rng.bounded(methods.size()))];
                const QString expected = ref.decide(method, path);
                QCOMPARE(decide(router, method, path), expected);
                const RouteSpec *any = router.anyForPath(path);
                QCOMPARE(any != nullptr, expected != u"404");
                ++compared;
                found += expected.contains(u'|');
            }
        }
        QCOMPARE(compared, 200 * 50);
        QVERIFY(found > 1000); // the tables did route a good share of the paths
    }
};

QTEST_APPLESS_MAIN(TestRouter)
#include "tst_router.moc"
