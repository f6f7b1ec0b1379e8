#include "DecisionFakes.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonValue>
#include <QRegularExpression>
#include <QSet>
#include <QtEndian>

#include <cmath>

namespace DecisionFakes {

namespace {

constexpr qint64 kOne = 10000; // 1 in probability units (10^kProbabilityScale)

QString jsonTypeName(const QJsonValue &value)
{
    if (value.isString())
        return QStringLiteral("a string");
    if (value.isDouble())
        return std::trunc(value.toDouble()) == value.toDouble()
                   ? QStringLiteral("an integer")
                   : QStringLiteral("a decimal number");
    if (value.isBool())
        return QStringLiteral("a boolean");
    if (value.isArray())
        return QStringLiteral("an array");
    if (value.isObject())
        return QStringLiteral("an object");
    return QStringLiteral("null");
}

Invalid missing(const QString &param)
{
    return {QStringLiteral("Missing required parameter: '%1'.").arg(param), param.toUtf8(),
            "missing_required_parameter"};
}

Invalid badType(const QString &param, const QString &expected, const QJsonValue &value)
{
    return {QStringLiteral("Invalid type for '%1': expected %2, but got %3 instead.")
                .arg(param, expected, jsonTypeName(value)),
            param.toUtf8(), "invalid_type"};
}

Invalid emptyString(const QString &param)
{
    return {QStringLiteral("Invalid '%1': empty string. Expected a string with minimum length 1, "
                           "but got an empty string instead.")
                .arg(param),
            param.toUtf8(), "empty_string"};
}

// The contract's criteria: a choice's is an object of option id -> description (a string or
// null), at least 2 options; a score's an ordered array of at least 2 distinct descriptions,
// the legend; a noul's is optional (true and false descriptions) and not used.
std::optional<Invalid> parseCriteria(const QJsonValue &value, const QString &param, Type type,
                                     QStringList *out)
{
    if (value.isUndefined() || value.isNull()) {
        if (type == Type::Noul)
            return std::nullopt;
        return missing(param);
    }
    if (type == Type::Noul)
        return value.isObject()
                   ? std::nullopt
                   : std::optional<Invalid>(badType(param, QStringLiteral("an object"), value));
    if (type == Type::Choice) {
        if (!value.isObject())
            return badType(param, QStringLiteral("an object of option descriptions"), value);
        const QJsonObject options = value.toObject();
        if (options.size() < 2)
            return Invalid{QStringLiteral("Invalid '%1': expected at least 2 options, but got "
                                          "%2 instead.")
                               .arg(param)
                               .arg(options.size()),
                           param.toUtf8(), "invalid_value"};
        for (auto it = options.begin(); it != options.end(); ++it) {
            const QString itemParam = param + u'.' + it.key();
            if (it.key().isEmpty())
                return emptyString(itemParam);
            if (!it.value().isString() && !it.value().isNull())
                return badType(itemParam, QStringLiteral("a string or null"), it.value());
            out->append(it.key());
        }
        return std::nullopt;
    }
    if (!value.isArray())
        return badType(param, QStringLiteral("an array of strings"), value);
    const QJsonArray items = value.toArray();
    if (items.size() < 2)
        return Invalid{QStringLiteral("Invalid '%1': array too short. Expected an array with "
                                      "minimum length 2, but got an array with length %2 "
                                      "instead.")
                           .arg(param)
                           .arg(items.size()),
                       param.toUtf8(), "array_below_min_length"};
    QSet<QString> seen;
    for (qsizetype i = 0; i < items.size(); ++i) {
        const QString itemParam = QStringLiteral("%1[%2]").arg(param).arg(i);
        if (!items[i].isString())
            return badType(itemParam, QStringLiteral("a string"), items[i]);
        const QString text = items[i].toString();
        if (text.isEmpty())
            return emptyString(itemParam);
        if (seen.contains(text))
            return Invalid{
                QStringLiteral("Invalid '%1': duplicate value '%2'.").arg(itemParam, text),
                itemParam.toUtf8(), "invalid_value"};
        seen.insert(text);
        out->append(text);
    }
    return std::nullopt;
}

std::optional<Invalid> parseQuestion(const QString &id, const QJsonValue &value, Question *out)
{
    const QString param = QStringLiteral("questions.") + id;
    if (!value.isObject())
        return badType(param, QStringLiteral("an object"), value);
    const QJsonObject q = value.toObject();
    out->id = id;

    const QJsonValue type = q.value(QLatin1String("type"));
    if (type.isUndefined())
        return missing(param + QStringLiteral(".type"));
    if (!type.isString())
        return badType(param + QStringLiteral(".type"), QStringLiteral("a string"), type);
    static const QHash<QString, Type> types{{QStringLiteral("noul"), Type::Noul},
                                            {QStringLiteral("choice"), Type::Choice},
                                            {QStringLiteral("score"), Type::Score}};
    const auto it = types.constFind(type.toString());
    if (it == types.cend())
        return Invalid{QStringLiteral("Invalid value: '%1'. Supported values are: 'noul', "
                                      "'choice', and 'score'.")
                           .arg(type.toString()),
                       (param + QStringLiteral(".type")).toUtf8(), "invalid_value"};
    out->type = *it;

    const QJsonValue instructions = q.value(QLatin1String("instructions"));
    if (instructions.isUndefined())
        return missing(param + QStringLiteral(".instructions"));
    if (!instructions.isString())
        return badType(param + QStringLiteral(".instructions"), QStringLiteral("a string"),
                       instructions);
    out->instructions = instructions.toString();

    return parseCriteria(q.value(QLatin1String("criteria")), param + QStringLiteral(".criteria"),
                         out->type, &out->criteria);
}

// A stream of 32-bit values derived from the state text and the question id.
class Dice
{
public:
    Dice(const QString &stateText, const QString &id)
    {
        QCryptographicHash h(QCryptographicHash::Sha256);
        h.addData(stateText.toUtf8());
        h.addData(QByteArrayView("\0", 1));
        h.addData(id.toUtf8());
        m_seed = h.result();
    }
    quint32 roll(int index) const
    {
        QCryptographicHash h(QCryptographicHash::Sha256);
        h.addData(m_seed);
        h.addData(QByteArray::number(index));
        return qFromBigEndian<quint32>(h.result().constData());
    }

private:
    QByteArray m_seed;
};

// count probabilities in units of 1/kOne that sum to kOne exactly.
QList<qint64> distribution(const Dice &dice, qsizetype count)
{
    QList<qint64> weights;
    qint64 total = 0;
    for (qsizetype i = 0; i < count; ++i) {
        const qint64 w = 1 + dice.roll(int(i)) % 1000;
        weights.append(w * w); // squared: some options clearly ahead
        total += w * w;
    }
    QList<qint64> units;
    qint64 given = 0;
    qsizetype top = 0;
    for (qsizetype i = 0; i < count; ++i) {
        units.append(weights[i] * kOne / total);
        given += units[i];
        if (weights[i] > weights[top])
            top = i;
    }
    units[top] += kOne - given;
    return units;
}

qsizetype argmax(const QList<qint64> &units)
{
    qsizetype top = 0;
    for (qsizetype i = 1; i < units.size(); ++i)
        if (units[i] > units[top])
            top = i;
    return top;
}

Json probability(qint64 units)
{
    return Json::raw(decimal(units, kProbabilityScale));
}

} // namespace

std::optional<Invalid> parseRequest(const QJsonObject &body, Request *request)
{
    const QJsonValue model = body.value(QLatin1String("model"));
    if (model.isUndefined())
        return missing(QStringLiteral("model"));
    if (!model.isString())
        return badType(QStringLiteral("model"), QStringLiteral("a string"), model);
    if (model.toString().isEmpty())
        return emptyString(QStringLiteral("model"));
    request->model = model.toString();

    const QJsonValue state = body.value(QLatin1String("state"));
    if (state.isUndefined())
        return missing(QStringLiteral("state"));
    if (state.isString())
        request->stateText = state.toString();
    else if (state.isObject())
        request->stateText =
            QString::fromUtf8(QJsonDocument(state.toObject()).toJson(QJsonDocument::Compact));
    else if (state.isArray())
        request->stateText =
            QString::fromUtf8(QJsonDocument(state.toArray()).toJson(QJsonDocument::Compact));
    else
        return badType(QStringLiteral("state"), QStringLiteral("a string, an object or an array"),
                       state);

    const QJsonValue questions = body.value(QLatin1String("questions"));
    if (questions.isUndefined())
        return missing(QStringLiteral("questions"));
    if (!questions.isObject())
        return badType(QStringLiteral("questions"), QStringLiteral("an object"), questions);
    const QJsonObject asked = questions.toObject();
    if (asked.isEmpty())
        return Invalid{QStringLiteral("Invalid 'questions': empty object. Expected an object "
                                      "with at least 1 question."),
                       "questions", "empty_object"};
    request->questions.clear();
    for (auto it = asked.constBegin(); it != asked.constEnd(); ++it) {
        if (it.key().isEmpty())
            return Invalid{QStringLiteral("Invalid 'questions': a question id is empty."),
                           "questions", "empty_string"};
        Question q;
        if (auto invalid = parseQuestion(it.key(), it.value(), &q))
            return invalid;
        request->questions.append(std::move(q));
    }
    return std::nullopt;
}

qint64 inputTokens(qint64 bodyBytes)
{
    return (bodyBytes + 3) / 4;
}

bool isDecimal(const QString &text)
{
    static const QRegularExpression re(QStringLiteral("^(0|[1-9][0-9]{0,17})(\\.[0-9]{1,30})?$"));
    return re.match(text).hasMatch();
}

QByteArray decimal(qint64 units, int scale)
{
    qint64 divisor = 1;
    for (int i = 0; i < scale; ++i)
        divisor *= 10;
    QByteArray out = QByteArray::number(units / divisor);
    QByteArray fraction = QByteArray::number(units % divisor).rightJustified(scale, '0');
    while (fraction.endsWith('0'))
        fraction.chop(1);
    if (!fraction.isEmpty())
        out += '.' + fraction;
    return out;
}

QByteArray defaultCost(qint64 inputTokens, qint64 outputTokens)
{
    // In millionths of a dollar: 1 per input token, 4 per output token.
    return decimal(inputTokens + 4 * outputTokens, 6);
}

Json answer(const Question &question, const QString &stateText)
{
    const Dice dice(stateText, question.id);
    switch (question.type) {
    case Type::Noul:
        return Json::object()
            .add("type", "noul")
            .add("probability", probability(dice.roll(0) % (kOne + 1)));
    case Type::Choice: {
        const QList<qint64> units = distribution(dice, question.criteria.size());
        const qsizetype top = argmax(units);
        Json probabilities = Json::object();
        for (qsizetype i = 0; i < units.size(); ++i)
            probabilities.add(question.criteria[i].toUtf8().constData(), probability(units[i]));
        return Json::object()
            .add("type", "choice")
            .add("choice", question.criteria[top])
            .add("probabilities", std::move(probabilities))
            .add("confidence", probability(units[top]));
    }
    case Type::Score: {
        const QList<qint64> units = distribution(dice, question.criteria.size());
        Json probabilities = Json::array();
        Json legend = Json::array();
        qint64 weighted = 0;
        for (qsizetype i = 0; i < units.size(); ++i) {
            probabilities.push(probability(units[i]));
            legend.push(question.criteria[i]);
            weighted += i * units[i];
        }
        return Json::object()
            .add("type", "score")
            .add("score", probability(weighted))
            .add("probabilities", std::move(probabilities))
            .add("legend", std::move(legend))
            .add("confidence", probability(units[argmax(units)]));
    }
    }
    return Json();
}

QByteArray responseBody(const Request &request, const QByteArray &id, qint64 bodyBytes,
                        const QString &cost)
{
    Json answers = Json::object();
    for (const Question &q : request.questions)
        answers.add(q.id.toUtf8().constData(), answer(q, request.stateText));
    const qint64 input = inputTokens(bodyBytes);
    const qint64 output = qint64(request.questions.size()) * kOutputTokensPerQuestion;
    Json usage = Json::object().add("input_tokens", input).add("output_tokens", output);
    if (cost.isEmpty())
        usage.add("cost", Json::raw(defaultCost(input, output)));
    else if (cost != QLatin1String("none"))
        usage.add("cost", Json::raw(cost.toLatin1()));
    return Json::object()
        .add("id", id)
        .add("object", "decision")
        .add("model", request.model + QLatin1String(kServedSuffix))
        .add("answers", std::move(answers))
        .add("usage", std::move(usage))
        .toJson();
}

} // namespace DecisionFakes
