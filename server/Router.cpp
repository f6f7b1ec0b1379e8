#include "Router.h"

void Router::add(RouteSpec spec)
{
    Entry e;
    e.segments = spec.pattern.split(u'/', Qt::SkipEmptyParts);
    e.spec = std::make_unique<RouteSpec>(std::move(spec));
    m_entries.push_back(std::move(e));
}

bool Router::matches(const QStringList &pattern, const QStringList &path,
                     QHash<QString, QString> *params)
{
    // A last segment {name+} takes one or more remaining segments, joined by '/'.
    const bool rest = !pattern.isEmpty() && pattern.last().endsWith(u"+}");
    if (rest ? path.size() < pattern.size() : pattern.size() != path.size())
        return false;
    for (qsizetype i = 0; i < pattern.size(); ++i) {
        const QString &p = pattern[i];
        if (rest && i == pattern.size() - 1) {
            if (params)
                params->insert(p.mid(1, p.size() - 3), path.mid(i).join(u'/'));
            return true;
        }
        if (p.startsWith(u'{') && p.endsWith(u'}')) {
            if (path[i].isEmpty())
                return false;
            if (params)
                params->insert(p.mid(1, p.size() - 2), path[i]);
        } else if (p != path[i]) {
            return false;
        }
    }
    return true;
}

Router::Match Router::match(const QByteArray &method, const QString &path) const
{
    Match m;
    const QStringList segments = path.split(u'/', Qt::SkipEmptyParts);
    for (const Entry &e : m_entries) {
        QHash<QString, QString> params;
        if (!matches(e.segments, segments, &params))
            continue;
        if (e.spec->method == method || (method == "HEAD" && e.spec->method == "GET")) {
            m.route = e.spec.get();
            m.params = std::move(params);
            m.allowedMethods.clear();
            return m;
        }
        m.allowedMethods.append(QString::fromLatin1(e.spec->method));
    }
    return m;
}

const RouteSpec *Router::anyForPath(const QString &path) const
{
    const QStringList segments = path.split(u'/', Qt::SkipEmptyParts);
    for (const Entry &e : m_entries)
        if (matches(e.segments, segments, nullptr))
            return e.spec.get();
    return nullptr;
}
