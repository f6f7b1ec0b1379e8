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
        size_t at = 0;
        int next = placeholder ? m_nodes[node].param : m_nodes[node].child(segment, &at);
        if (next < 0) {
            next = int(m_nodes.size());
            m_nodes.emplace_back();
            if (placeholder) {
                m_nodes[node].param = next;
            } else {
                auto &literal = m_nodes[node].literal;
                literal.insert(literal.begin() + qsizetype(at), {segment, next});
            }
        }
        node = next;
    }
    if (node >= 0)
        m_nodes[node].end.push_back(index);
    m_entries.push_back(std::move(e));
}

int Router::Node::child(QStringView segment, size_t *at) const
{
    const auto it = std::lower_bound(
        literal.begin(), literal.end(), segment,
        [](const std::pair<QString, int> &e, QStringView s) { return QStringView(e.first) < s; });
    if (at)
        *at = size_t(it - literal.begin());
    return it != literal.end() && it->first == segment ? it->second : -1;
}

void Router::collect(int node, const Segments &path, qsizetype depth, std::vector<int> &out) const
{
    const Node &n = m_nodes[node];
    if (depth == path.size()) {
        out.insert(out.end(), n.end.begin(), n.end.end());
        return;
    }
    out.insert(out.end(), n.rest.begin(), n.rest.end());
    const int literal = n.child(path[depth]);
    if (literal >= 0)
        collect(literal, path, depth + 1, out);
    if (n.param >= 0 && !path[depth].isEmpty())
        collect(n.param, path, depth + 1, out);
}

std::vector<int> Router::candidates(const Segments &path) const
{
    std::vector<int> out;
    collect(0, path, 0, out);
    std::sort(out.begin(), out.end());
    return out;
}

bool Router::matches(const QStringList &pattern, const Segments &path,
                     QHash<QString, QString> *params)
{
    // A last segment {name+} takes one or more remaining segments, joined by '/'.
    const bool rest = !pattern.isEmpty() && pattern.last().endsWith(u"+}");
    if (rest ? path.size() < pattern.size() : pattern.size() != path.size())
        return false;
    for (qsizetype i = 0; i < pattern.size(); ++i) {
        const QString &p = pattern[i];
        if (rest && i == pattern.size() - 1) {
            if (params) {
                QString joined = path[i].toString();
                for (qsizetype j = i + 1; j < path.size(); ++j) {
                    joined += u'/';
                    joined += path[j];
                }
                params->insert(p.mid(1, p.size() - 3), joined);
            }
            return true;
        }
        if (p.startsWith(u'{') && p.endsWith(u'}')) {
            if (path[i].isEmpty())
                return false;
            if (params)
                params->insert(p.mid(1, p.size() - 2), path[i].toString());
        } else if (p != path[i]) {
            return false;
        }
    }
    return true;
}

Router::Match Router::match(const QByteArray &method, const QString &path) const
{
    Match m;
    const Segments segments = QStringView(path).split(u'/', Qt::SkipEmptyParts);
    for (const int i : candidates(segments)) {
        const Entry &e = m_entries[size_t(i)];
        QHash<QString, QString> params;
        if (!matches(e.segments, segments, &params))
            continue;
        if (e.spec->method == method ||
            (method == "HEAD" && e.spec->method == "GET" && e.spec->head)) {
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
    const Segments segments = QStringView(path).split(u'/', Qt::SkipEmptyParts);
    for (const int i : candidates(segments))
        if (matches(m_entries[size_t(i)].segments, segments, nullptr))
            return m_entries[size_t(i)].spec.get();
    return nullptr;
}
