#include "SocialCatalog.h"

#include <algorithm>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMap>
#include <QSet>

// The upstream's document is fetched from the network: every value is checked for its type
// before use, and anything of the wrong type is skipped (an operation, a parameter, a field),
// never trusted. References are followed only inside the document, a bounded number of hops.

namespace {

constexpr int kMaxRefHops = 8; // a chain of $refs longer than this is a loop, or hostile

QString text(const QJsonValue &v)
{
    return v.isString() ? v.toString() : QString();
}

bool isUnreserved(char16_t c)
{
    return (c >= u'a' && c <= u'z') || (c >= u'A' && c <= u'Z') || (c >= u'0' && c <= u'9') ||
           c == u'-' || c == u'.' || c == u'_' || c == u'~';
}

// A path segment the routes can match literally and the relay can send as it is: URL-unreserved
// characters only (no template braces, no '?', '#', '%' or spaces), neither "." nor "..".
bool isSegment(QStringView s)
{
    if (s.isEmpty() || s == u"." || s == u"..")
        return false;
    return std::all_of(s.begin(), s.end(), [](QChar c) { return isUnreserved(c.unicode()); });
}

// An action path: at least "platform/action", every segment literal.
bool isActionPath(QStringView path)
{
    int segments = 0;
    for (QStringView s : path.split(u'/')) {
        if (!isSegment(s))
            return false;
        ++segments;
    }
    return segments >= 2;
}

// The name in a local reference "#/components/<kind>/<name>" (a JSON pointer in a URI fragment:
// percent-encoded, "~1" for '/', "~0" for '~'), or an empty string for any other reference.
QString componentName(const QString &ref, QLatin1String kind)
{
    const QString head = QLatin1String("#/components/") + kind + u'/';
    if (!ref.startsWith(head))
        return {};
    QString name =
        QString::fromUtf8(QByteArray::fromPercentEncoding(ref.mid(head.size()).toUtf8()));
    if (name.contains(u'/'))
        return {}; // a pointer into a component: not followed
    name.replace(QLatin1String("~1"), QLatin1String("/"))
        .replace(QLatin1String("~0"), QLatin1String("~"));
    return name;
}

// `v`, or what its chain of $refs into components.<kind> leads to; empty when that is not an
// object or the chain is broken.
QJsonObject resolved(QJsonValue v, const QJsonObject &pool, QLatin1String kind)
{
    for (int hop = 0; hop <= kMaxRefHops; ++hop) {
        if (!v.isObject())
            return {};
        const QJsonObject o = v.toObject();
        const QJsonValue ref = o.value(QLatin1String("$ref"));
        if (ref.isUndefined())
            return o;
        const QString name = componentName(text(ref), kind);
        if (name.isEmpty() || !pool.contains(name))
            return {};
        v = pool.value(name);
    }
    return {};
}

std::optional<SocialParam> queryParam(const QJsonObject &p)
{
    const QString name = text(p.value(QLatin1String("name")));
    if (name.isEmpty() || p.value(QLatin1String("in")) != QLatin1String("query"))
        return std::nullopt;
    SocialParam param;
    param.name = name;
    param.required = p.value(QLatin1String("required")).toBool(false);
    param.description = text(p.value(QLatin1String("description")));
    param.schema = p.value(QLatin1String("schema")).toObject();
    param.example = p.value(QLatin1String("example"));
    return param;
}

} // namespace

QStringList SocialAction::requiredParams() const
{
    QStringList names;
    for (const SocialParam &p : params)
        if (p.required)
            names.append(p.name);
    return names;
}

std::optional<SocialCatalog> SocialCatalog::parse(const QByteArray &document, QString *error,
                                                  const QString &prefix)
{
    const auto fail = [error](const QString &why) -> std::optional<SocialCatalog> {
        if (error)
            *error = why;
        return std::nullopt;
    };
    QJsonParseError parseError;
    const QJsonDocument json = QJsonDocument::fromJson(document, &parseError);
    if (parseError.error != QJsonParseError::NoError)
        return fail(QStringLiteral("not JSON (%1 at offset %2)")
                        .arg(parseError.errorString())
                        .arg(parseError.offset));
    const QJsonObject root = json.object();
    const QJsonValue paths = root.value(QLatin1String("paths"));
    if (!json.isObject() || !text(root.value(QLatin1String("openapi"))).startsWith(u"3.") ||
        !(paths.isObject() || paths.isUndefined()))
        return fail(QStringLiteral("not an OpenAPI 3 document"));

    const QJsonObject components = root.value(QLatin1String("components")).toObject();
    const QJsonObject parameters = components.value(QLatin1String("parameters")).toObject();
    const QJsonObject bodies = components.value(QLatin1String("requestBodies")).toObject();

    SocialCatalog catalog;
    const QJsonObject pathItems = paths.toObject();
    for (auto it = pathItems.begin(); it != pathItems.end(); ++it) {
        if (!it.key().startsWith(prefix))
            continue;
        const QString path = it.key().mid(prefix.size());
        if (!isActionPath(path) || !it.value().isObject())
            continue;
        const QJsonObject item = it.value().toObject();
        // One operation per path: GET wins; other methods are not relayed.
        QJsonObject op = item.value(QLatin1String("get")).toObject();
        QByteArray method = "GET";
        if (!item.value(QLatin1String("get")).isObject()) {
            if (!item.value(QLatin1String("post")).isObject())
                continue;
            op = item.value(QLatin1String("post")).toObject();
            method = "POST";
        }

        SocialAction a;
        a.path = path;
        a.platform = path.left(path.indexOf(u'/'));
        a.method = method;
        a.operationId = text(op.value(QLatin1String("operationId")));
        a.summary = text(op.value(QLatin1String("summary")));
        a.description = text(op.value(QLatin1String("description")));
        for (const QJsonValue &tag : op.value(QLatin1String("tags")).toArray())
            if (const QString t = text(tag); !t.isEmpty() && !a.tags.contains(t))
                a.tags.append(t);
        // The path item's parameters, then the operation's; a later one of the same name
        // replaces an earlier one in place (OpenAPI's override rule).
        for (const QJsonValue &list :
             {item.value(QLatin1String("parameters")), op.value(QLatin1String("parameters"))}) {
            for (const QJsonValue &v : list.toArray()) {
                const auto param = queryParam(resolved(v, parameters, QLatin1String("parameters")));
                if (!param)
                    continue;
                const auto same =
                    std::find_if(a.params.begin(), a.params.end(),
                                 [&](const SocialParam &p) { return p.name == param->name; });
                if (same != a.params.end())
                    *same = *param;
                else
                    a.params.append(*param);
            }
        }
        if (method == "POST")
            a.requestBody = resolved(op.value(QLatin1String("requestBody")), bodies,
                                     QLatin1String("requestBodies"));
        // A path written twice in the text (Qt keeps both keys): the last one wins, as in most
        // JSON readers.
        if (const auto at = catalog.m_index.constFind(a.path); at != catalog.m_index.cend()) {
            catalog.m_actions[*at] = std::move(a);
            continue;
        }
        catalog.m_index.insert(a.path, catalog.m_actions.size());
        catalog.m_actions.append(std::move(a));
    }
    if (catalog.m_actions.isEmpty())
        return fail(QStringLiteral("no operations under %1").arg(prefix));

    const QJsonObject info = root.value(QLatin1String("info")).toObject();
    catalog.m_title = text(info.value(QLatin1String("title")));
    catalog.m_version = text(info.value(QLatin1String("version")));
    catalog.m_schemas = components.value(QLatin1String("schemas")).toObject();
    return catalog;
}

const SocialAction *SocialCatalog::find(QStringView path) const
{
    const auto it = m_index.constFind(path.toString());
    return it == m_index.cend() ? nullptr : &m_actions.at(*it);
}

QList<SocialPlatform> SocialCatalog::platforms() const
{
    QMap<QString, int> counts;
    for (const SocialAction &a : m_actions)
        ++counts[a.platform];
    QList<SocialPlatform> list;
    for (auto it = counts.cbegin(); it != counts.cend(); ++it)
        list.append({it.key(), it.value()});
    return list;
}

namespace {

const QString kEnvelope = QStringLiteral("SwitchyardEnvelope");
const QString kError = QStringLiteral("SwitchyardError");
const QString kSchemaRef = QStringLiteral("#/components/schemas/");

// Copies the upstream's schemas that the document refers to, and only those: every $ref of a
// copied value is rewritten to the copy's name, and the schema it names is copied too (the
// closure, cycles included). A $ref that leads nowhere in the upstream's components.schemas is
// dropped (the schema then allows more, never a dangling reference). Names are kept where
// OpenAPI allows them (^[a-zA-Z0-9._-]+$) and free, else made so.
class SchemaCopier
{
public:
    explicit SchemaCopier(const QJsonObject &upstream) : m_upstream(upstream)
    {
        m_used = {kEnvelope, kError};
    }

    QJsonValue copy(const QJsonValue &v)
    {
        if (v.isArray()) {
            QJsonArray out;
            for (const QJsonValue &item : v.toArray())
                out.append(copy(item));
            return out;
        }
        if (!v.isObject())
            return v;
        const QJsonObject in = v.toObject();
        QJsonObject out;
        for (auto it = in.begin(); it != in.end(); ++it) {
            const QString &key = it.key();
            if (key == u"$ref") {
                const QString name =
                    target(componentName(text(it.value()), QLatin1String("schemas")));
                if (!name.isEmpty())
                    out.insert(key, kSchemaRef + name);
            } else if (key != u"$id" && key != u"$schema") {
                // ($id would change how references inside resolve, $schema the dialect.)
                out.insert(key, copy(it.value()));
            }
        }
        return out;
    }

    // The copies, the referenced schemas of the copies included.
    QJsonObject schemas()
    {
        while (!m_queue.isEmpty()) {
            const QString name = m_queue.takeFirst();
            m_out.insert(m_names.value(name), copy(m_upstream.value(name)));
        }
        return m_out;
    }

private:
    // The name of the copy of upstream schema `name`, queued for copying; empty when there is
    // no such schema (or it is no schema: JSON Schema has objects and booleans).
    QString target(const QString &name)
    {
        if (name.isEmpty())
            return {};
        if (const auto it = m_names.constFind(name); it != m_names.cend())
            return *it;
        const QJsonValue schema = m_upstream.value(name);
        if (!schema.isObject() && !schema.isBool())
            return {};
        QString base = name;
        for (QChar &c : base)
            if (!isUnreserved(c.unicode()) || c == u'~')
                c = u'_';
        QString out = base;
        for (int n = 2; m_used.contains(out); ++n)
            out = base + u'_' + QString::number(n);
        m_used.insert(out);
        m_names.insert(name, out);
        m_queue.append(name);
        return out;
    }

    const QJsonObject &m_upstream;
    QHash<QString, QString> m_names; // upstream name -> the copy's
    QSet<QString> m_used;
    QStringList m_queue;
    QJsonObject m_out;
};

bool isJsonMediaType(const QString &type)
{
    const QString t = type.section(u';', 0, 0).trimmed().toLower();
    return t == u"application/json" || (t.startsWith(u"application/") && t.endsWith(u"+json"));
}

// FastAPI writes a parameter's named examples into its schema, where JSON Schema wants an array
// of values: keep the values.
QJsonObject withExampleArray(QJsonObject schema)
{
    const QJsonValue examples = schema.value(QLatin1String("examples"));
    if (examples.isUndefined() || examples.isArray())
        return schema;
    QJsonArray values;
    for (const QJsonValue &e : examples.toObject()) {
        const QJsonValue value = e.toObject().value(QLatin1String("value"));
        if (!value.isUndefined())
            values.append(value);
    }
    if (values.isEmpty())
        schema.remove(QLatin1String("examples"));
    else
        schema.insert(QLatin1String("examples"), values);
    return schema;
}

QString derivedOperationId(const QString &path, const QByteArray &method)
{
    QString id = path;
    for (QChar &c : id)
        if (!(c.isLetterOrNumber() && c.unicode() < 0x80))
            c = u'_';
    return id + u'_' + QString::fromLatin1(method).toLower();
}

bool isUsableOperationId(const QString &id)
{
    return !id.isEmpty() && id.size() <= 200 && std::all_of(id.begin(), id.end(), [](QChar c) {
        return isUnreserved(c.unicode()) && c != u'~';
    });
}

QJsonObject errorResponse(const QString &description)
{
    return {{"description", description},
            {"content",
             QJsonObject{{"application/json",
                          QJsonObject{{"schema", QJsonObject{{"$ref", kSchemaRef + kError}}}}}}}};
}

} // namespace

QJsonObject SocialCatalog::document(const DocumentOptions &options) const
{
    QString prefix = options.pathPrefix;
    if (!prefix.startsWith(u'/'))
        prefix.prepend(u'/');
    if (!prefix.endsWith(u'/'))
        prefix.append(u'/');

    // The public name of each platform. A name two platforms would share goes to the one
    // renamed to it, as the routes decide; a name that is no literal path segment is left out.
    QMap<QString, QString> owner; // public name -> upstream platform
    for (const SocialPlatform &p : platforms()) {
        const QString name = options.publicName ? options.publicName(p.name) : p.name;
        if (!isSegment(name))
            continue;
        const auto it = owner.constFind(name);
        if (it == owner.cend() || (*it == name && p.name != name))
            owner.insert(name, p.name);
    }
    QHash<QString, QString> publicNames; // upstream platform -> public name
    for (auto it = owner.cbegin(); it != owner.cend(); ++it)
        publicNames.insert(it.value(), it.key());

    QList<const SocialAction *> shown;
    for (const SocialAction &a : m_actions)
        if (publicNames.contains(a.platform))
            shown.append(&a);

    // operationIds: the upstream's where it is usable and unique among the actions shown, else
    // one derived from the public path and method, with a numeric suffix when taken.
    QHash<QString, int> upstreamIds;
    for (const SocialAction *a : shown)
        if (isUsableOperationId(a->operationId))
            ++upstreamIds[a->operationId];
    QSet<QString> usedIds;
    QHash<const SocialAction *, QString> ids;
    for (const SocialAction *a : shown) {
        if (upstreamIds.value(a->operationId) == 1) {
            ids.insert(a, a->operationId);
            usedIds.insert(a->operationId);
        }
    }
    for (const SocialAction *a : shown) {
        if (ids.contains(a))
            continue;
        const QString publicPath = publicNames.value(a->platform) + a->path.mid(a->platform.size());
        const QString base = derivedOperationId(publicPath, a->method);
        QString id = base;
        for (int n = 2; usedIds.contains(id); ++n)
            id = base + u'_' + QString::number(n);
        usedIds.insert(id);
        ids.insert(a, id);
    }

    const QJsonObject responses{
        {"200", QJsonObject{{"$ref", "#/components/responses/Envelope"}}},
        {"400", QJsonObject{{"$ref", "#/components/responses/BadRequest"}}},
        {"401", QJsonObject{{"$ref", "#/components/responses/Unauthorized"}}},
        {"402", QJsonObject{{"$ref", "#/components/responses/PaymentRequired"}}},
        {"403", QJsonObject{{"$ref", "#/components/responses/Forbidden"}}},
        {"429", QJsonObject{{"$ref", "#/components/responses/TooManyRequests"}}},
        {"503", QJsonObject{{"$ref", "#/components/responses/Unavailable"}}},
        {"504", QJsonObject{{"$ref", "#/components/responses/Timeout"}}},
    };

    SchemaCopier schemas(m_schemas);
    QJsonObject paths;
    for (const SocialAction *a : shown) {
        const QString publicName = publicNames.value(a->platform);
        QJsonObject op;
        op.insert(
            QLatin1String("tags"),
            QJsonArray::fromStringList(a->tags.isEmpty() ? QStringList{publicName} : a->tags));
        if (!a->summary.isEmpty())
            op.insert(QLatin1String("summary"), a->summary);
        if (!a->description.isEmpty())
            op.insert(QLatin1String("description"), a->description);
        op.insert(QLatin1String("operationId"), ids.value(a));

        QJsonArray params;
        for (const SocialParam &p : a->params) {
            QJsonObject param{{"name", p.name}, {"in", "query"}, {"required", p.required}};
            if (!p.description.isEmpty())
                param.insert(QLatin1String("description"), p.description);
            param.insert(QLatin1String("schema"), p.schema.isEmpty()
                                                      ? QJsonObject{{"type", "string"}}
                                                      : schemas.copy(withExampleArray(p.schema)));
            if (!p.example.isUndefined())
                param.insert(QLatin1String("example"), schemas.copy(p.example));
            params.append(param);
        }
        if (!params.isEmpty())
            op.insert(QLatin1String("parameters"), params);

        // The body as Switchyard takes it: JSON (the route refuses other bodies), with the
        // schemas it refers to.
        const QJsonObject content = a->requestBody.value(QLatin1String("content")).toObject();
        QJsonObject bodyContent;
        for (auto it = content.begin(); it != content.end(); ++it) {
            if (!isJsonMediaType(it.key()) || !it.value().isObject())
                continue;
            const QJsonObject media = it.value().toObject();
            QJsonObject out;
            const QJsonValue schema = media.value(QLatin1String("schema"));
            if (schema.isObject() || schema.isBool())
                out.insert(QLatin1String("schema"), schemas.copy(schema));
            if (media.contains(QLatin1String("example")))
                out.insert(QLatin1String("example"),
                           schemas.copy(media.value(QLatin1String("example"))));
            bodyContent.insert(it.key(), out);
        }
        if (!bodyContent.isEmpty()) {
            QJsonObject body{{"content", bodyContent}};
            const QJsonValue required = a->requestBody.value(QLatin1String("required"));
            if (required.isBool())
                body.insert(QLatin1String("required"), required);
            if (const QString d = text(a->requestBody.value(QLatin1String("description")));
                !d.isEmpty())
                body.insert(QLatin1String("description"), d);
            op.insert(QLatin1String("requestBody"), body);
        }
        op.insert(QLatin1String("responses"), responses);
        paths.insert(prefix + publicName + a->path.mid(a->platform.size()),
                     QJsonObject{{QString::fromLatin1(a->method).toLower(), op}});
    }

    QJsonObject componentSchemas = schemas.schemas();
    componentSchemas.insert(
        kEnvelope,
        QJsonObject{{"type", "object"},
                    {"description",
                     "The upstream's envelope, relayed as it came: code 200 or 0 is a "
                     "success (billed), any other code an upstream error."},
                    {"required", QJsonArray{"code"}},
                    {"properties",
                     QJsonObject{{"code", QJsonObject{{"type", "integer"}}},
                                 {"data", QJsonObject{{"description", "The action's data."}}}}}});
    componentSchemas.insert(
        kError,
        QJsonObject{
            {"type", "object"},
            {"required", QJsonArray{"error"}},
            {"properties",
             QJsonObject{
                 {"error",
                  QJsonObject{
                      {"type", "object"},
                      {"required", QJsonArray{"message", "type"}},
                      {"properties", QJsonObject{{"message", QJsonObject{{"type", "string"}}},
                                                 {"type", QJsonObject{{"type", "string"}}}}}}}}}});

    const QJsonObject responseComponents{
        {"Envelope",
         QJsonObject{
             {"description", "The upstream's answer: its envelope, byte for byte."},
             {"content",
              QJsonObject{
                  {"application/json",
                   QJsonObject{{"schema", QJsonObject{{"$ref", kSchemaRef + kEnvelope}}}}}}}}},
        {"BadRequest", errorResponse(QStringLiteral("An invalid path, a missing required query "
                                                    "parameter, or a body that is not JSON."))},
        {"Unauthorized", errorResponse(QStringLiteral("No API key, or a bad one."))},
        {"PaymentRequired", errorResponse(QStringLiteral("The balance is below the price."))},
        {"Forbidden", errorResponse(QStringLiteral("The platform is not available."))},
        {"TooManyRequests", errorResponse(QStringLiteral("Rate limited."))},
        {"Unavailable",
         errorResponse(QStringLiteral("No catalog or no usable upstream yet, or the upstream "
                                      "could not be reached."))},
        {"Timeout", errorResponse(QStringLiteral("The upstream did not answer in time."))},
    };

    const QJsonObject securitySchemes{
        {"bearerAuth", QJsonObject{{"type", "http"},
                                   {"scheme", "bearer"},
                                   {"description", "The API key: Authorization: Bearer sk-..."}}},
        {"apiKeyHeader", QJsonObject{{"type", "apiKey"},
                                     {"in", "header"},
                                     {"name", "X-API-Key"},
                                     {"description", "The API key in X-API-Key."}}},
    };

    QString description = QStringLiteral("Social-media data relayed from the upstream's catalog");
    if (!m_version.isEmpty())
        description += QStringLiteral(" (version %1)").arg(m_version);
    description +=
        QStringLiteral(": %1 actions. Each answers the upstream's envelope {code, data}; "
                       "a success (code 200 or 0) is billed once.")
            .arg(shown.size());

    return QJsonObject{
        {"openapi", "3.1.0"},
        {"info",
         QJsonObject{{"title", options.title.isEmpty()
                                   ? QStringLiteral("Switchyard social-media data")
                                   : options.title},
                     {"version", options.version.isEmpty() ? QStringLiteral("0") : options.version},
                     {"description", description}}},
        {"servers",
         QJsonArray{QJsonObject{
             {"url", options.serverUrl.isEmpty() ? QStringLiteral("/") : options.serverUrl}}}},
        {"security", QJsonArray{QJsonObject{{"bearerAuth", QJsonArray()}},
                                QJsonObject{{"apiKeyHeader", QJsonArray()}}}},
        {"paths", paths},
        {"components", QJsonObject{{"schemas", componentSchemas},
                                   {"responses", responseComponents},
                                   {"securitySchemes", securitySchemes}}},
    };
}
