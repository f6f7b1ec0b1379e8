#include "ChatEvaluator.h"

#include "upstream/JsonScan.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSet>

namespace ChatEvaluator {

namespace {

constexpr qint64 kOne = 10'000; // probability 1 in the answer's units (4 decimals)

QString kindName(Kind kind)
{
    switch (kind) {
    case Kind::Noul:
        return QStringLiteral("noul");
    case Kind::Choice:
        return QStringLiteral("choice");
    case Kind::Score:
        return QStringLiteral("score");
    }
    return {};
}

QString compact(const QJsonValue &v)
{
    const QJsonDocument doc =
        v.isArray() ? QJsonDocument(v.toArray()) : QJsonDocument(v.toObject());
    return QString::fromUtf8(doc.toJson(QJsonDocument::Compact));
}

QJsonObject closedObject(const QJsonObject &properties, const QJsonArray &required)
{
    return {{"type", "object"},
            {"properties", properties},
            {"required", required},
            {"additionalProperties", false}};
}

QJsonObject questionSchema(const Question &q)
{
    QJsonObject answer;
    if (q.kind == Kind::Noul) {
        answer = {{"type", "boolean"}};
    } else {
        QJsonArray values;
        for (const QString &label : q.labels)
            values.append(label.toInt());
        answer = {{"type", "integer"}, {"enum", values}};
    }
    QJsonObject probabilities;
    QJsonArray labels;
    for (const QString &label : q.labels) {
        probabilities.insert(label,
                             QJsonObject{{"type", "number"}, {"minimum", 0}, {"maximum", 1}});
        labels.append(label);
    }
    // QJsonObject orders keys: "answer" sorts before "probabilities", as the model should
    // write them.
    return closedObject(
        {{"answer", answer}, {"probabilities", closedObject(probabilities, labels)}},
        QJsonArray{"answer", "probabilities"});
}

QString quoted(const QString &text)
{
    return QString::fromUtf8(JsonScan::quote(text.toUtf8()));
}

// ```json ... ``` around the JSON, as some models write it whatever they are asked.
QString withoutFence(const QString &text)
{
    const QString t = text.trimmed();
    if (!t.startsWith(QLatin1String("```")) || !t.endsWith(QLatin1String("```")) || t.size() < 6)
        return t;
    const qsizetype firstLine = t.indexOf(u'\n');
    if (firstLine < 0)
        return t;
    return t.mid(firstLine + 1, t.size() - 3 - firstLine - 1).trimmed();
}

// The label an answer value names, when it names one: noul true/false, else an integer label
// (a whole number, or a string that is exactly a label).
std::optional<QString> answerLabel(const Question &q, const QJsonValue &v)
{
    QString label;
    if (v.isBool())
        label = v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    else if (v.isString())
        label = v.toString();
    else if (v.isDouble() && q.kind != Kind::Noul && std::abs(v.toDouble()) < 1e9 &&
             v.toDouble() == std::floor(v.toDouble()))
        label = QString::number(qint64(v.toDouble()));
    if (q.labels.contains(label))
        return label;
    return std::nullopt;
}

QByteArrayView trimmed(QByteArrayView v)
{
    auto junk = [](char c) { return c == ' ' || c == '"' || c == '\t' || c == '\n' || c == '\r'; };
    while (!v.isEmpty() && junk(v.front()))
        v = v.sliced(1);
    while (!v.isEmpty() && junk(v.back()))
        v.chop(1);
    return v;
}

QByteArray bytesOf(const QJsonObject &entry)
{
    const QByteArray token = entry.value("token").toString().toUtf8();
    const QJsonArray bytes = entry.value("bytes").toArray();
    if (bytes.isEmpty())
        return token;
    QByteArray out;
    for (const QJsonValue &b : bytes) {
        const double d = b.toDouble(-1);
        if (!b.isDouble() || d < 0 || d > 255 || d != std::floor(d))
            return token;
        out.append(char(int(d)));
    }
    return out;
}

QJsonObject shape(const Question &q, const QList<qint64> &units, const QString &answer,
                  const char *source)
{
    const auto p = [](qint64 u) { return double(u) / double(kOne); };
    QJsonObject out{{"type", kindName(q.kind)}, {"probability_source", source}};
    if (q.kind == Kind::Noul) {
        out.insert("probability", p(units.value(0)));
        return out;
    }
    const qint64 top = *std::max_element(units.begin(), units.end());
    if (q.kind == Kind::Choice) {
        // The most probable option; on a tie the model's own answer when it is among them.
        qsizetype chosen = units.indexOf(top);
        const qsizetype answered = q.labels.indexOf(answer);
        if (answered >= 0 && units.value(answered) == top)
            chosen = answered;
        QJsonObject probabilities;
        for (qsizetype i = 0; i < q.options.size(); ++i)
            probabilities.insert(q.options.at(i), p(units.value(i)));
        out.insert("choice", q.options.value(chosen));
        out.insert("probabilities", probabilities);
        out.insert("confidence", p(top));
        return out;
    }
    qint64 weighted = 0;
    QJsonArray probabilities;
    for (qsizetype i = 0; i < units.size(); ++i) {
        weighted += i * units.at(i);
        probabilities.append(p(units.at(i)));
    }
    out.insert("score", p(weighted));
    out.insert("probabilities", probabilities);
    out.insert("legend", QJsonArray::fromStringList(q.descriptions));
    out.insert("confidence", p(top));
    return out;
}

} // namespace

QList<Question> questions(const QJsonObject &body)
{
    QList<Question> out;
    const QJsonObject all = body.value("questions").toObject();
    for (auto it = all.begin(); it != all.end(); ++it) {
        const QJsonObject o = it.value().toObject();
        Question q;
        q.id = it.key();
        q.instructions = o.value("instructions").toString();
        const QString type = o.value("type").toString();
        const QJsonValue criteria = o.value("criteria");
        if (type == u"choice") {
            q.kind = Kind::Choice;
            const QJsonObject options = criteria.toObject();
            for (auto c = options.begin(); c != options.end(); ++c) {
                q.labels.append(QString::number(q.labels.size() + 1));
                q.options.append(c.key());
                q.descriptions.append(c.value().toString());
            }
        } else if (type == u"score") {
            q.kind = Kind::Score;
            const QJsonArray levels = criteria.toArray();
            for (qsizetype i = 0; i < levels.size(); ++i) {
                q.labels.append(QString::number(i));
                q.descriptions.append(levels.at(i).toString());
            }
        } else {
            q.kind = Kind::Noul;
            q.labels = {QStringLiteral("true"), QStringLiteral("false")};
            const QJsonObject c = criteria.toObject();
            q.descriptions = {c.value("true").toString(), c.value("false").toString()};
        }
        out.append(q);
    }
    return out;
}

QJsonObject answerSchema(const QList<Question> &questions)
{
    QJsonObject properties;
    QJsonArray required;
    for (const Question &q : questions) {
        properties.insert(q.id, questionSchema(q));
        required.append(q.id);
    }
    return closedObject(properties, required);
}

QString systemPrompt()
{
    return QStringLiteral(
        "You are an evaluator. You read a state and answer every question about it. Reply "
        "with one JSON object and nothing else: for each question id, an object with "
        "\"answer\", your answer given as one of the question's labels (true or false for a "
        "yes/no question, the number labelling one option of a choice or one level of a "
        "score), then \"probabilities\", the probability from 0 to 1 you give each of the "
        "question's labels, summing to 1. Judge only by the state, the instructions and the "
        "criteria.");
}

QString userPrompt(const QJsonValue &state, const QList<Question> &questions)
{
    QString text = QStringLiteral("# State\n\n");
    text += state.isString() ? state.toString() : compact(state);
    text += QStringLiteral("\n\n# Questions\n");
    for (const Question &q : questions) {
        text += QStringLiteral("\n## Question %1\n").arg(quoted(q.id));
        switch (q.kind) {
        case Kind::Noul:
            text += QStringLiteral("Type: yes/no (answer true or false)\n");
            break;
        case Kind::Choice:
            text += QStringLiteral("Type: choice (answer with the label of one option)\n");
            break;
        case Kind::Score:
            text += QStringLiteral("Type: score (answer with the label of one level, from 0, "
                                   "the lowest, to %1, the highest)\n")
                        .arg(q.labels.size() - 1);
            break;
        }
        text += QStringLiteral("Instructions: %1\nLabels:\n").arg(q.instructions);
        for (qsizetype i = 0; i < q.labels.size(); ++i) {
            const QString description = q.descriptions.value(i);
            if (q.kind == Kind::Choice)
                text += QStringLiteral("%1 = option %2%3\n")
                            .arg(q.labels.at(i), quoted(q.options.at(i)),
                                 description.isEmpty() ? QString()
                                                       : QStringLiteral(": ") + description);
            else
                text += QStringLiteral("%1%2\n").arg(
                    q.labels.at(i),
                    description.isEmpty() ? QString() : QStringLiteral(" = ") + description);
        }
    }
    return text;
}

QJsonObject chatRequest(const QJsonValue &state, const QList<Question> &questions, const Ask &ask)
{
    QJsonObject chat{
        {"messages",
         QJsonArray{QJsonObject{{"role", "system"}, {"content", systemPrompt()}},
                    QJsonObject{{"role", "user"}, {"content", userPrompt(state, questions)}}}},
        {"temperature", 0},
        {ask.maxCompletionTokens ? "max_completion_tokens" : "max_tokens", ask.maxOutputTokens}};
    const QJsonObject schema = answerSchema(questions);
    if (ask.jsonSchema) {
        chat.insert("response_format",
                    QJsonObject{{"type", "json_schema"},
                                {"json_schema", QJsonObject{{"name", "decisions"},
                                                            {"strict", true},
                                                            {"schema", schema}}}});
        chat.insert("logprobs", true);
        chat.insert("top_logprobs", ask.topLogprobs);
    } else {
        chat.insert("tools", QJsonArray{QJsonObject{
                                 {"type", "function"},
                                 {"function", QJsonObject{{"name", "answer"},
                                                          {"description", "The answers, one per "
                                                                          "question id."},
                                                          {"parameters", schema}}}}});
        chat.insert("tool_choice", QJsonObject{{"type", "function"},
                                               {"function", QJsonObject{{"name", "answer"}}}});
    }
    return chat;
}

QList<Token> tokens(const QJsonValue &content)
{
    QList<Token> out;
    for (const QJsonValue &e : content.toArray()) {
        const QJsonObject entry = e.toObject();
        if (!entry.value("token").isString())
            return {}; // the text cannot be rebuilt past it
        Token t;
        t.bytes = bytesOf(entry);
        const QJsonValue logprob = entry.value("logprob");
        t.logprob = logprob.isDouble() ? logprob.toDouble() : std::nan("");
        for (const QJsonValue &a : entry.value("top_logprobs").toArray()) {
            const QJsonObject alt = a.toObject();
            if (alt.value("token").isString() && alt.value("logprob").isDouble())
                t.top.append({bytesOf(alt), alt.value("logprob").toDouble()});
        }
        out.append(t);
    }
    return out;
}

std::optional<QList<double>> distributionAt(const QList<Token> &tokens, qsizetype begin,
                                            qsizetype end, const QStringList &labels)
{
    if (begin < 0 || end <= begin)
        return std::nullopt;
    qsizetype at = 0;
    const Token *token = nullptr;
    for (const Token &t : tokens) {
        if (begin < at + t.bytes.size()) {
            token = &t;
            break;
        }
        at += t.bytes.size();
    }
    if (!token || end > at + token->bytes.size())
        return std::nullopt; // not there, or the value goes on in later tokens
    // What the token carries besides the value (`":` before `3`), which an alternative that
    // carries it too is read without.
    const QByteArrayView before = QByteArrayView(token->bytes).first(begin - at);
    const QByteArrayView after = QByteArrayView(token->bytes).sliced(end - at);
    QList<QByteArray> wanted;
    for (const QString &label : labels)
        wanted.append(label.toUtf8());
    QList<double> p(labels.size(), 0.0);
    QSet<QByteArray> seen;
    bool found = false;
    auto count = [&](const QByteArray &text, double logprob) {
        if (std::isnan(logprob) || seen.contains(text))
            return;
        seen.insert(text);
        QByteArrayView core(text);
        if (core.size() >= before.size() + after.size() && core.startsWith(before) &&
            core.endsWith(after))
            core = core.sliced(before.size(), core.size() - before.size() - after.size());
        const qsizetype i = wanted.indexOf(trimmed(core).toByteArray());
        if (i < 0)
            return;
        p[i] += std::exp(std::min(logprob, 0.0));
        found = true;
    };
    count(token->bytes, token->logprob);
    for (const auto &[text, logprob] : token->top)
        count(text, logprob);
    const double sum = std::accumulate(p.begin(), p.end(), 0.0);
    if (!found || !(sum > 0) || !std::isfinite(sum))
        return std::nullopt;
    for (double &x : p)
        x /= sum;
    return p;
}

std::optional<QList<double>> answerDistribution(const QList<Token> &tokens, const QString &id,
                                                const QString &answerLabel,
                                                const QStringList &labels)
{
    QByteArray text;
    for (const Token &t : tokens)
        text += t.bytes;
    const QByteArray key = JsonScan::quote(id.toUtf8());
    const JsonScan::Span s =
        JsonScan::find(text, {QByteArrayView(key).sliced(1, key.size() - 2), "answer"});
    if (!s.found() ||
        trimmed(QByteArrayView(text).sliced(s.begin, s.end - s.begin)) != answerLabel.toUtf8())
        return std::nullopt;
    return distributionAt(tokens, s.begin, s.end, labels);
}

std::optional<QList<double>> verbalized(const QJsonValue &probabilities, const QStringList &labels)
{
    if (!probabilities.isObject())
        return std::nullopt;
    const QJsonObject o = probabilities.toObject();
    QList<double> p;
    double sum = 0;
    for (const QString &label : labels) {
        const QJsonValue v = o.value(label);
        const double x =
            v.isDouble() && !std::isnan(v.toDouble()) ? qBound(0.0, v.toDouble(), 1.0) : 0.0;
        p.append(x);
        sum += x;
    }
    if (!(sum > 0))
        return std::nullopt;
    for (double &x : p)
        x /= sum;
    return p;
}

QList<qint64> roundDistribution(const QList<double> &p)
{
    QList<qint64> units(p.size(), 0);
    if (p.isEmpty())
        return units;
    double sum = 0;
    for (double x : p)
        sum += std::isfinite(x) && x > 0 ? x : 0;
    if (!(sum > 0) || !std::isfinite(sum)) {
        units[0] = kOne;
        return units;
    }
    QList<double> remainder(p.size(), 0);
    qint64 given = 0;
    for (qsizetype i = 0; i < p.size(); ++i) {
        const double exact =
            std::isfinite(p.at(i)) && p.at(i) > 0 ? p.at(i) / sum * double(kOne) : 0.0;
        units[i] = qBound<qint64>(0, qint64(std::floor(exact)), kOne);
        remainder[i] = exact - double(units[i]);
        given += units[i];
    }
    QList<qsizetype> order(p.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](qsizetype a, qsizetype b) { return remainder.at(a) > remainder.at(b); });
    // Shares rounded down never sum above the whole; what is left is less than one unit per
    // share.
    for (qsizetype k = 0; given < kOne; k = (k + 1) % order.size(), ++given)
        ++units[order.at(k)];
    return units;
}

Result answers(const QList<Question> &questions, const QJsonObject &chatCompletion)
{
    Result r;
    const QJsonArray choices = chatCompletion.value("choices").toArray();
    const QJsonObject choice = choices.isEmpty() ? QJsonObject() : choices.first().toObject();
    const QJsonObject message = choice.value("message").toObject();
    if (const QString refusal = message.value("refusal").toString(); !refusal.isEmpty()) {
        r.error = QStringLiteral("the model refused: %1").arg(refusal.left(300));
        return r;
    }
    QString text;
    bool fromTool = false;
    for (const QJsonValue &call : message.value("tool_calls").toArray()) {
        const QJsonObject fn = call.toObject().value("function").toObject();
        if (fn.value("name").toString() == u"answer" && fn.value("arguments").isString()) {
            text = fn.value("arguments").toString();
            fromTool = true;
            break;
        }
    }
    if (!fromTool)
        text = message.value("content").toString();
    if (text.trimmed().isEmpty()) {
        r.error = QStringLiteral("choices[0].message has neither content nor a call of the tool "
                                 "'answer'");
        return r;
    }
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(withoutFence(text).toUtf8(), &parseError);
    if (!doc.isObject()) {
        r.error = choice.value("finish_reason").toString() == u"length"
                      ? QStringLiteral("it was cut off at the output limit "
                                       "(decisions.chat_evaluator.max_output_tokens)")
                      : QStringLiteral("it is not a JSON object");
        return r;
    }
    const QJsonObject answer = doc.object();
    const QList<Token> toks =
        fromTool ? QList<Token>() : tokens(choice.value("logprobs").toObject().value("content"));
    QJsonObject out;
    for (const Question &q : questions) {
        const QJsonValue entry = answer.value(q.id);
        if (!entry.isObject()) {
            r.error = entry.isUndefined()
                          ? QStringLiteral("the question %1 has no answer").arg(quoted(q.id))
                          : QStringLiteral("the answer to %1 is not an object").arg(quoted(q.id));
            return r;
        }
        const QJsonObject e = entry.toObject();
        const auto label = answerLabel(q, e.value("answer"));
        if (!label) {
            r.error = q.kind == Kind::Noul
                          ? QStringLiteral("%1.answer is not true or false").arg(quoted(q.id))
                          : QStringLiteral("%1.answer is not a label from %2 to %3")
                                .arg(quoted(q.id), q.labels.first(), q.labels.last());
            return r;
        }
        const char *source = "logprobs";
        std::optional<QList<double>> p;
        if (!toks.isEmpty())
            p = answerDistribution(toks, q.id, *label, q.labels);
        if (!p) {
            source = "verbalized";
            p = verbalized(e.value("probabilities"), q.labels);
        }
        if (!p) {
            source = "answer";
            p = QList<double>(q.labels.size(), 0.0);
            (*p)[q.labels.indexOf(*label)] = 1.0;
        }
        out.insert(q.id, shape(q, roundDistribution(*p), *label, source));
    }
    r.answers = out;
    return r;
}

} // namespace ChatEvaluator
