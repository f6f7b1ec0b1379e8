#include "DecisionsConfig.h"

#include "llm/CostBound.h"
#include "Money.h"

#include <limits>

namespace {

const QString kGatewayPrefix = QStringLiteral("gateway/");

ChatEvaluatorConfig parseChatEvaluator(const ConfigFields &section)
{
    ChatEvaluatorConfig c;
    const ConfigFields o = section.section(QStringLiteral("chat_evaluator"));
    // A misspelt setting would leave the evaluator silently off or unbounded.
    o.onlyKnown({"enabled", "models", "top_logprobs", "max_output_tokens", "timeout_ms"});
    c.enabled = o.flag(QStringLiteral("enabled"), c.enabled);
    const QString models = QStringLiteral("a non-empty array of gateway model ids (a prefix may "
                                          "end in *); leave it out to allow every chat model");
    if (o.has(QStringLiteral("models"))) {
        c.models = o.strings(QStringLiteral("models"), {}, models);
        for (const QString &id : c.models)
            if (id.isEmpty() || (id.indexOf(u'*') >= 0 && id.indexOf(u'*') != id.size() - 1))
                o.fail(QStringLiteral("models"), QStringLiteral("must be ") + models);
        if (c.models.isEmpty())
            o.fail(QStringLiteral("models"), QStringLiteral("must be ") + models);
    }
    c.topLogprobs = o.whole(QStringLiteral("top_logprobs"), c.topLogprobs, {1, 20});
    c.maxOutputTokens =
        o.whole(QStringLiteral("max_output_tokens"), c.maxOutputTokens, {1, 1'000'000});
    c.timeoutMs = o.whole(QStringLiteral("timeout_ms"), c.timeoutMs, {1'000, 600'000});
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

DecisionsConfig DecisionsConfig::fromJson(const QJsonObject &json)
{
    const ConfigFields section(json, QStringLiteral("decisions"));
    DecisionsConfig c = defaults();
    applyProviderSection(
        c.providers, section,
        [] {
            DecisionProvider p;
            p.totalTimeoutMs = kTimeoutMs; // the contract's upstream timeout
            return p;
        },
        [](DecisionProvider &p, const ConfigFields &o) {
            o.choice(QStringLiteral("type"), 0, {{"decisions", 0}});
            p.path = o.urlPath(QStringLiteral("path"), p.path);
        });
    applyModelSection(
        c.models, c.providers, section, [] { return DecisionModel(); },
        [](DecisionModel &m, const ConfigFields &o, bool) {
            if (m.id.startsWith(kGatewayPrefix))
                o.fail(QStringLiteral("id"), QStringLiteral("must not start with gateway/"));
            const CreditRange per1m{.per = QStringLiteral("per 1M tokens")};
            m.inputPrice = o.credits(QStringLiteral("input_per_1m"), m.inputPrice,
                                     QStringLiteral("0.50"), per1m);
            m.outputPrice = o.credits(QStringLiteral("output_per_1m"), m.outputPrice,
                                      QStringLiteral("0.50"), per1m);
            m.maxOutputTokens = o.whole(QStringLiteral("max_output_tokens"), m.maxOutputTokens,
                                        {1, 1'000'000'000, QStringLiteral("tokens")});
            m.maxCost =
                o.credits(QStringLiteral("max_cost"), m.maxCost, QStringLiteral("0.05"), {.lo = 1});
        });
    const ConfigFields b = section.section(QStringLiteral("bounds"));
    DecisionBounds &bounds = c.bounds;
    bounds.maxQuestions = b.whole(QStringLiteral("max_questions"), bounds.maxQuestions, {1, 1'000});
    bounds.maxOptions = b.whole(QStringLiteral("max_options"), bounds.maxOptions, {1, 1'000});
    bounds.maxInstructionsChars = b.whole(QStringLiteral("max_instructions_chars"),
                                          bounds.maxInstructionsChars, {1, 1'000'000});
    bounds.maxDescriptionChars = b.whole(QStringLiteral("max_description_chars"),
                                         bounds.maxDescriptionChars, {1, 1'000'000});
    c.chatEvaluator = parseChatEvaluator(section);
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
