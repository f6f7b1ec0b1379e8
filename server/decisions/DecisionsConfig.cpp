#include "DecisionsConfig.h"

#include "llm/CostBound.h"
#include "Money.h"

#include <cmath>
#include <stdexcept>

namespace {

[[noreturn]] void fail(const QString &message)
{
    throw std::runtime_error(("config: decisions." + message).toStdString());
}

const QString kGatewayPrefix = QStringLiteral("gateway/");

qint64 price(const QJsonObject &o, const char *field, qint64 fallback, const QString &where)
{
    const QJsonValue v = o.value(QLatin1String(field));
    if (v.isUndefined())
        return fallback;
    const auto units = Money::parseCredits(v.toString());
    if (!v.isString() || !units || *units < 0)
        fail(QStringLiteral("%1.%2 must be a decimal string of credits per 1M tokens, e.g. "
                            "\"0.50\"")
                 .arg(where, QLatin1String(field)));
    return *units;
}

// A whole number from lo to hi at o[field], or fallback when absent; `where` names o.
int wholeNumber(const QJsonObject &o, const char *field, int fallback, int lo, int hi,
                const QString &where)
{
    const QJsonValue v = o.value(QLatin1String(field));
    if (v.isUndefined())
        return fallback;
    const double d = v.toDouble();
    if (!v.isDouble() || d < lo || d > hi || d != std::floor(d))
        fail(QStringLiteral("%1.%2 must be a whole number from %3 to %4")
                 .arg(where, QLatin1String(field))
                 .arg(lo)
                 .arg(hi));
    return int(d);
}

ChatEvaluatorConfig parseChatEvaluator(const QJsonValue &value)
{
    ChatEvaluatorConfig c;
    if (value.isUndefined())
        return c;
    const QString where = QStringLiteral("chat_evaluator");
    if (!value.isObject())
        fail(where + QStringLiteral(" must be an object"));
    const QJsonObject o = value.toObject();
    // A misspelt setting would leave the evaluator silently off or unbounded.
    static const QStringList known = {"enabled", "models", "top_logprobs", "max_output_tokens",
                                      "timeout_ms"};
    for (auto it = o.begin(); it != o.end(); ++it)
        if (!known.contains(it.key()))
            fail(QStringLiteral("%1.%2 is not a setting (%3)")
                     .arg(where, it.key(), known.join(QStringLiteral(", "))));
    const QJsonValue enabled = o.value("enabled");
    if (!enabled.isUndefined() && !enabled.isBool())
        fail(where + QStringLiteral(".enabled must be true or false"));
    c.enabled = enabled.toBool(c.enabled);
    const QJsonValue models = o.value("models");
    if (!models.isUndefined()) {
        const QString bad = QStringLiteral(".models must be a non-empty array of gateway model "
                                           "ids (a prefix may end in *); leave it out to allow "
                                           "every chat model");
        if (!models.isArray() || models.toArray().isEmpty())
            fail(where + bad);
        for (const QJsonValue &m : models.toArray()) {
            const QString id = m.toString();
            const qsizetype star = id.indexOf(u'*');
            if (!m.isString() || id.isEmpty() || (star >= 0 && star != id.size() - 1))
                fail(where + bad);
            c.models.append(id);
        }
    }
    c.topLogprobs = wholeNumber(o, "top_logprobs", c.topLogprobs, 1, 20, where);
    c.maxOutputTokens = wholeNumber(o, "max_output_tokens", c.maxOutputTokens, 1, 1'000'000, where);
    c.timeoutMs = wholeNumber(o, "timeout_ms", c.timeoutMs, 1'000, 600'000, where);
    return c;
}

} // namespace

QString DecisionProvider::unusableReason() const
{
    return missingSetting(QStringLiteral("decisions"), QStringLiteral("decisions"));
}

DecisionsConfig DecisionsConfig::defaults()
{
    DecisionsConfig c;
    DecisionProvider p;
    p.name = QStringLiteral("openrouter");
    p.baseUrl = QStringLiteral("https://openrouter.ai/api/v1");
    p.totalTimeoutMs = kTimeoutMs;
    c.providers = {p};
    // Fallback prices (credits per 1M tokens), used only when the upstream reports no cost.
    const qint64 in = 1'000'000'000;  // 1.00
    const qint64 out = 4'000'000'000; // 4.00
    c.models = {
        {QStringLiteral("~vendorD/evaluator-latest"), p.name,
         QStringLiteral("~vendorD/evaluator-latest"), QStringLiteral("vendorD"), in, out},
        {QStringLiteral("vendorD/evaluator-1.13"), p.name, QStringLiteral("vendorD/evaluator-1.13"),
         QStringLiteral("vendorD"), in, out},
    };
    return c;
}

DecisionsConfig DecisionsConfig::fromJson(const QJsonObject &section)
{
    DecisionsConfig c = defaults();
    applyProviderSection(
        c.providers, section, QStringLiteral("decisions"),
        [] {
            DecisionProvider p;
            p.totalTimeoutMs = kTimeoutMs; // the contract's upstream timeout
            return p;
        },
        [](DecisionProvider &p, const QJsonObject &o, const QString &where) {
            if (o.value("type").toString(QStringLiteral("decisions")) != u"decisions")
                fail(where.mid(10) + QStringLiteral(".type must be decisions"));
            p.path = o.value("path").toString(p.path);
            if (!p.path.startsWith(u'/') || p.path.contains(u'?') || p.path.contains(u' '))
                fail(where.mid(10) + QStringLiteral(".path must be a path starting with /"));
        });
    const QJsonValue models = section.value("models");
    if (!models.isUndefined() && !models.isArray())
        fail(QStringLiteral("models must be an array of model entries"));
    const QJsonArray ma = models.toArray();
    for (qsizetype i = 0; i < ma.size(); ++i) {
        const QString where = QStringLiteral("models[%1]").arg(i);
        const QJsonObject o = ma.at(i).toObject();
        DecisionModel m;
        m.id = o.value("id").toString();
        if (m.id.isEmpty() || m.id.startsWith(kGatewayPrefix))
            fail(where + QStringLiteral(".id is required and does not start with gateway/"));
        if (const DecisionModel *existing = c.model(m.id))
            m = *existing;
        m.provider = o.value("provider").toString(m.provider);
        if (!c.provider(m.provider))
            fail(where + QStringLiteral(".provider names no provider ('%1')").arg(m.provider));
        m.upstreamModel =
            o.value("upstream_model").toString(m.upstreamModel.isEmpty() ? m.id : m.upstreamModel);
        m.ownedBy = o.value("owned_by").toString(m.ownedBy.isEmpty() ? m.provider : m.ownedBy);
        m.inputPrice = price(o, "input_per_1m", m.inputPrice, where);
        m.outputPrice = price(o, "output_per_1m", m.outputPrice, where);
        {
            const QJsonValue v = o.value("max_output_tokens");
            const double d = v.toDouble();
            if (!v.isUndefined() && (!v.isDouble() || d < 1 || d > 1e9 || d != std::floor(d)))
                fail(where + QStringLiteral(".max_output_tokens must be a positive whole number "
                                            "of tokens (at most 1000000000)"));
            if (!v.isUndefined())
                m.maxOutputTokens = qint64(d);
        }
        if (o.contains("max_cost")) {
            const QJsonValue v = o.value("max_cost");
            const auto units = Money::parseCredits(v.toString());
            if (!v.isString() || !units || *units <= 0)
                fail(where + QStringLiteral(".max_cost must be a decimal string of credits above "
                                            "zero, e.g. \"0.05\""));
            m.maxCost = *units;
        }
        bool replaced = false;
        for (DecisionModel &e : c.models)
            if (e.id == m.id) {
                e = m;
                replaced = true;
            }
        if (!replaced)
            c.models.append(m);
    }
    const QJsonValue b = section.value("bounds");
    if (!b.isUndefined() && !b.isObject())
        fail(QStringLiteral("bounds must be an object"));
    const QJsonObject bo = b.toObject();
    const QString where = QStringLiteral("bounds");
    c.bounds.maxQuestions =
        wholeNumber(bo, "max_questions", c.bounds.maxQuestions, 1, 1'000, where);
    c.bounds.maxOptions = wholeNumber(bo, "max_options", c.bounds.maxOptions, 1, 1'000, where);
    c.bounds.maxInstructionsChars = wholeNumber(bo, "max_instructions_chars",
                                                c.bounds.maxInstructionsChars, 1, 1'000'000, where);
    c.bounds.maxDescriptionChars =
        wholeNumber(bo, "max_description_chars", c.bounds.maxDescriptionChars, 1, 1'000'000, where);
    c.chatEvaluator = parseChatEvaluator(section.value("chat_evaluator"));
    return c;
}

const DecisionProvider *DecisionsConfig::provider(const QString &name) const
{
    return findProvider(providers, name);
}

const DecisionModel *DecisionsConfig::model(const QString &id) const
{
    const QString bare = id.startsWith(kGatewayPrefix) ? id.mid(kGatewayPrefix.size()) : id;
    for (const DecisionModel &m : models)
        if (m.id == bare)
            return &m;
    return nullptr;
}

bool ChatEvaluatorConfig::allows(const QString &asked, const QString &resolved) const
{
    if (models.isEmpty())
        return true;
    for (const QString &m : models) {
        if (m.endsWith(u'*')) {
            const QStringView prefix = QStringView(m).chopped(1);
            if (asked.startsWith(prefix) || resolved.startsWith(prefix))
                return true;
        } else if (m == asked || m == resolved) {
            return true;
        }
    }
    return false;
}

QJsonArray DecisionsConfig::modelsJson() const
{
    QJsonArray out;
    for (const DecisionModel &m : models)
        for (const QString &id : {m.id, kGatewayPrefix + m.id})
            out.append(QJsonObject{
                {"id", id},
                {"object", "model"},
                {"created", 0},
                {"owned_by", m.ownedBy},
                {"endpoints", QJsonArray{"decisions"}},
                {"pricing", QJsonObject{{"input", Money::formatCredits(m.inputPrice)},
                                        {"output", Money::formatCredits(m.outputPrice)},
                                        {"unit", "per 1M tokens, when the upstream reports no "
                                                 "cost"}}}});
    return out;
}

std::optional<qint64> DecisionsConfig::costUnits(QByteArrayView text)
{
    // digits[.digits][e[+-]digits], non-negative; value * 1e9 rounded up, in 128 bits.
    qsizetype i = 0;
    __int128 mantissa = 0;
    int fraction = 0;
    int digits = 0;
    bool point = false;
    for (; i < text.size(); ++i) {
        const char c = text[i];
        if (c >= '0' && c <= '9') {
            if (++digits > 30)
                return std::nullopt;
            mantissa = mantissa * 10 + (c - '0');
            if (point)
                ++fraction;
        } else if (c == '.' && !point) {
            point = true;
        } else {
            break;
        }
    }
    if (digits == 0)
        return std::nullopt;
    int exponent = 0;
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        ++i;
        bool negative = false;
        if (i < text.size() && (text[i] == '+' || text[i] == '-'))
            negative = text[i++] == '-';
        int e = 0;
        qsizetype start = i;
        for (; i < text.size() && text[i] >= '0' && text[i] <= '9' && e < 1000; ++i)
            e = e * 10 + (text[i] - '0');
        if (i == start)
            return std::nullopt;
        exponent = negative ? -e : e;
    }
    if (i != text.size())
        return std::nullopt;
    const int scale = 9 + exponent - fraction; // units = mantissa * 10^scale
    if (scale >= 0) {
        __int128 v = mantissa;
        for (int k = 0; k < scale; ++k) {
            v *= 10;
            if (v > std::numeric_limits<qint64>::max())
                return std::nullopt;
        }
        return qint64(v);
    }
    __int128 divisor = 1;
    for (int k = 0; k < -scale; ++k) {
        divisor *= 10;
        if (divisor > mantissa) // the rest only shrinks the value below one unit
            return mantissa > 0 ? std::optional<qint64>(1) : std::optional<qint64>(0);
    }
    return qint64((mantissa + divisor - 1) / divisor);
}

std::optional<qint64> DecisionsConfig::holdFor(const DecisionModel &m, qint64 upstreamBytes)
{
    if (m.maxCost > 0)
        return m.maxCost;
    const auto units = CostBound::cost(qMax<qint64>(0, upstreamBytes) + CostBound::kTemplateTokens,
                                       m.inputPrice, m.maxOutputTokens, m.outputPrice);
    if (!units)
        return std::nullopt;
    return qMax<qint64>(1, *units);
}

qint64 DecisionsConfig::tokenCost(qint64 input, qint64 output, const DecisionModel &m)
{
    const __int128 total = __int128(input) * m.inputPrice + __int128(output) * m.outputPrice;
    return qint64((total + 999'999) / 1'000'000);
}
