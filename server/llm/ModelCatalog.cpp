#include "ModelCatalog.h"

#include "Money.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <stdexcept>

namespace {

} // namespace

ModelPrice ModelCatalog::priceFromJson(const QJsonObject &pricing, const QString &where)
{
    auto one = [&](const char *field) -> qint64 {
        const QJsonValue v = pricing.value(QLatin1String(field));
        if (v.isUndefined())
            return 0;
        const auto units = Money::parseCredits(v.toString());
        if (!v.isString() || !units || *units < 0)
            throw std::runtime_error(QStringLiteral("%1.%2 must be a non-negative decimal string "
                                                    "(credits per 1M tokens)")
                                         .arg(where, QLatin1String(field))
                                         .toStdString());
        return *units;
    };
    return {one("input"), one("output"), one("cache_read"), one("cache_write")};
}

QJsonObject ModelCatalog::priceToJson(const ModelPrice &p)
{
    return {{"input", Money::formatCredits(p.input)},
            {"output", Money::formatCredits(p.output)},
            {"cache_read", Money::formatCredits(p.cacheRead)},
            {"cache_write", Money::formatCredits(p.cacheWrite)}};
}

ModelCatalog ModelCatalog::fromJson(const QByteArray &json)
{
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject())
        throw std::runtime_error("the model catalog is not a JSON object: " +
                                 err.errorString().toStdString());
    ModelCatalog c;
    const QJsonObject root = doc.object();
    for (const QJsonValue &v : root.value("models").toArray()) {
        const ModelEntry m = entryFromJson(v.toObject());
        if (c.m_index.contains(m.id))
            throw std::runtime_error("model " + m.id.toStdString() + " is listed twice");
        c.m_index.insert(m.id, c.m_models.size());
        c.m_models.append(m);
    }
    c.m_auto = root.value("auto").toString();
    if (!c.m_auto.isEmpty() && !c.m_index.contains(c.m_auto))
        throw std::runtime_error("'auto' names a model that is not in the catalog");
    return c;
}

ModelEntry ModelCatalog::entryFromJson(const QJsonObject &o)
{
    ModelEntry m;
    m.id = o.value("id").toString();
    if (m.id.isEmpty())
        throw std::runtime_error("a model in the catalog has no id");
    if (m.id.startsWith(QLatin1String("gateway/")))
        throw std::runtime_error("model " + m.id.toStdString() +
                                 ": gateway/* models come from a catalog provider's live list");
    m.ownedBy = o.value("owned_by").toString();
    m.provider = o.value("provider").toString();
    if (m.provider.isEmpty())
        throw std::runtime_error("model " + m.id.toStdString() + " names no provider");
    m.upstreamModel = o.value("upstream_model").toString(m.id);
    static const QStringList known = {QStringLiteral("chat.completions"),
                                      QStringLiteral("responses"), QStringLiteral("messages")};
    for (const QJsonValue &e : o.value("endpoints").toArray()) {
        if (!known.contains(e.toString()))
            throw std::runtime_error("model " + m.id.toStdString() + ": unknown endpoint '" +
                                     e.toString().toStdString() +
                                     "' (chat.completions, responses or messages)");
        m.endpoints.append(e.toString());
    }
    m.price =
        priceFromJson(o.value("pricing").toObject(), QStringLiteral("model %1: pricing").arg(m.id));
    return m;
}

void ModelCatalog::upsert(const ModelEntry &entry)
{
    const auto it = m_index.constFind(entry.id);
    if (it != m_index.constEnd()) {
        m_models[*it] = entry;
        return;
    }
    m_index.insert(entry.id, m_models.size());
    m_models.append(entry);
}

void ModelCatalog::setAutoModel(const QString &id)
{
    if (!m_index.contains(id))
        throw std::runtime_error("'auto' names " + id.toStdString() +
                                 ", which is not in the catalog");
    m_auto = id;
}

ModelCatalog ModelCatalog::builtin()
{
    QFile f(QStringLiteral(":/switchyard/catalog.json"));
    if (!f.open(QIODevice::ReadOnly))
        throw std::runtime_error("the built-in model catalog is missing");
    return fromJson(f.readAll());
}

std::optional<ModelEntry> ModelCatalog::find(const QString &id) const
{
    const auto it = m_index.constFind(id);
    if (it == m_index.constEnd())
        return std::nullopt;
    return m_models.at(*it);
}

namespace {

// The /v1/models shape: the price with its unit spelled out.
QJsonObject priceJson(const ModelPrice &p)
{
    QJsonObject o = ModelCatalog::priceToJson(p);
    o.insert("unit", "credits per 1M tokens");
    return o;
}

} // namespace

QJsonObject ModelCatalog::entryJson(const ModelEntry &m)
{
    return QJsonObject{{"id", m.id},
                       {"object", "model"},
                       {"created", 0},
                       {"owned_by", m.ownedBy},
                       {"endpoints", QJsonArray::fromStringList(m.endpoints)},
                       {"pricing", priceJson(m.price)}};
}

QJsonArray ModelCatalog::toJson() const
{
    QJsonArray data;
    for (const ModelEntry &m : m_models)
        data.append(entryJson(m));
    if (const auto target = find(m_auto))
        data.append(QJsonObject{{"id", "auto"},
                                {"object", "model"},
                                {"created", 0},
                                {"owned_by", "switchyard"},
                                {"resolves_to", m_auto},
                                {"endpoints", QJsonArray{"chat.completions"}},
                                {"pricing", priceJson(target->price)}});
    return data;
}
