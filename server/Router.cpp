#include "Router.h"

#include <algorithm>

void Router::add(RouteSpec spec)
{
    Entry e;
    e.segments = spec.pattern.split(u'/', Qt::SkipEmptyParts);
    e.spec = std::make_unique<RouteSpec>(std::move(spec));
    const int index = int(m_entries.size());
    int node = 0;
    for (qsizetype i = 0; i < e.segments.size(); ++i) {
        const QString &segment = e.segments[i];
        const bool placeholder = segment.startsWith(u'{') && segment.endsWith(u'}');
        if (placeholder && i == e.segments.size() - 1 && segment.endsWith(u"+}")) {
            m_nodes[node].rest.push_back(index);
            node = -1;
            break;
        }
        int next = placeholder ? m_nodes[node].param : m_nodes[node].literal.value(segment, -1);
        if (next < 0) {
            next = int(m_nodes.size());
            m_nodes.emplace_back();
            if (placeholder)
                m_nodes[node].param = next;
            else
                m_nodes[node].literal.insert(segment, next);
        }
        node = next;
    }
    if (node >= 0)
        m_nodes[node].end.push_back(index);
    m_entries.push_back(std::move(e));
}

void Router::collect(int node, const QStringList &path, qsizetype depth,
                     std::vector<int> &out) const
{
    const Node &n = m_nodes[node];
    if (depth == path.size()) {
        out.insert(out.end(), n.end.begin(), n.end.end());
        return;
    }
    out.insert(out.end(), n.rest.begin(), n.rest.end());
    const int literal = n.literal.value(path[depth], -1);
    if (literal >= 0)
        collect(literal, path, depth + 1, out);
    if (n.param >= 0 && !path[depth].isEmpty())
        collect(n.param, path, depth + 1, out);
}

std::vector<int> Router::candidates(const QStringList &path) const
{
    std::vector<int> out;
    collect(0, path, 0, out);
    std::sort(out.begin(), out.end());
    return out;
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
    for (const int i : candidates(segments)) {
        const Entry &e = m_entries[size_t(i)];
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
    for (const int i : candidates(segments))
        if (matches(m_entries[size_t(i)].segments, segments, nullptr))
            return m_entries[size_t(i)].spec.get();
    return nullptr;
}
