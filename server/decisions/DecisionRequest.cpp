#include "DecisionRequest.h"

#include <QJsonArray>

namespace DecisionRequests {

namespace {

// Collects the first failure; every check returns false once one was found.
struct Checker
{
    const DecisionBounds &bounds;
    RequestError *error;

    bool fail(const QString &path, const QString &message)
    {
        *error = {400, message, path};
        return false;
    }

    bool id(const QString &path, const QString &value, const char *what)
    {
        if (value.isEmpty() || value.size() > bounds.maxIdChars || value.contains(u'.'))
            return fail(path, QStringLiteral("'%1': %2 ids must be 1 to %3 characters without "
                                             "'.'.")
                                  .arg(path, QLatin1String(what))
                                  .arg(bounds.maxIdChars));
        return true;
    }

    bool description(const QString &path, const QJsonValue &v, bool nullAllowed)
    {
        if (nullAllowed && v.isNull())
            return true;
        if (!v.isString())
            return fail(path, QStringLiteral("'%1' must be a string%2.")
                                  .arg(path, nullAllowed ? QStringLiteral(" or null") : QString()));
        if (v.toString().size() > bounds.maxDescriptionChars)
            return fail(path, QStringLiteral("'%1' is longer than %2 characters.")
                                  .arg(path)
                                  .arg(bounds.maxDescriptionChars));
        return true;
    }

    bool question(const QString &qid, const QJsonValue &value)
    {
        const QString at = QStringLiteral("questions.") + qid;
        if (!id(at, qid, "question"))
            return false;
        if (!value.isObject())
            return fail(
                at, QStringLiteral("'%1' must be an object with type and instructions.").arg(at));
        const QJsonObject q = value.toObject();
        const QJsonValue type = q.value("type");
        const QString typePath = at + QStringLiteral(".type");
        if (type.isUndefined())
            return fail(typePath, QStringLiteral("'%1' is required.").arg(typePath));
        const QString t = type.toString();
        if (t != u"noul" && t != u"choice" && t != u"score")
            return fail(typePath,
                        QStringLiteral("'%1' must be noul, choice or score.").arg(typePath));
        const QString insPath = at + QStringLiteral(".instructions");
        const QJsonValue ins = q.value("instructions");
        if (ins.isUndefined())
            return fail(insPath, QStringLiteral("'%1' is required.").arg(insPath));
        if (!ins.isString() || ins.toString().trimmed().isEmpty())
            return fail(insPath, QStringLiteral("'%1' must be a non-empty string.").arg(insPath));
        if (ins.toString().size() > bounds.maxInstructionsChars)
            return fail(insPath, QStringLiteral("'%1' is longer than %2 characters.")
                                     .arg(insPath)
                                     .arg(bounds.maxInstructionsChars));
        const QString crPath = at + QStringLiteral(".criteria");
        const QJsonValue criteria = q.value("criteria");
        if (t == u"noul")
            return noulCriteria(crPath, criteria);
        if (criteria.isUndefined())
            return fail(crPath,
                        QStringLiteral("'%1' is required for a %2 question.").arg(crPath, t));
        return t == u"choice" ? choiceCriteria(crPath, criteria) : scoreCriteria(crPath, criteria);
    }

    bool noulCriteria(const QString &path, const QJsonValue &v)
    {
        if (v.isUndefined() || v.isNull())
            return true;
        if (!v.isObject())
            return fail(path, QStringLiteral("'%1' must be an object with true and false "
                                             "descriptions.")
                                  .arg(path));
        const QJsonObject o = v.toObject();
        for (auto it = o.begin(); it != o.end(); ++it) {
            const QString key = path + u'.' + it.key();
            if (it.key() != u"true" && it.key() != u"false")
                return fail(key, QStringLiteral("'%1': a noul question's criteria are true and "
                                                "false only.")
                                     .arg(key));
            if (!description(key, it.value(), false))
                return false;
        }
        return true;
    }

    bool choiceCriteria(const QString &path, const QJsonValue &v)
    {
        if (!v.isObject())
            return fail(path, QStringLiteral("'%1' must be an object of option id to "
                                             "description.")
                                  .arg(path));
        const QJsonObject o = v.toObject();
        if (o.size() < 2 || o.size() > bounds.maxOptions)
            return fail(path, QStringLiteral("'%1' must have 2 to %2 options, not %3.")
                                  .arg(path)
                                  .arg(bounds.maxOptions)
                                  .arg(o.size()));
        for (auto it = o.begin(); it != o.end(); ++it) {
            const QString key = path + u'.' + it.key();
            if (!id(key, it.key(), "option") || !description(key, it.value(), true))
                return false;
        }
        return true;
    }

    bool scoreCriteria(const QString &path, const QJsonValue &v)
    {
        if (!v.isArray())
            return fail(path,
                        QStringLiteral("'%1' must be an ordered array of descriptions.").arg(path));
        const QJsonArray a = v.toArray();
        if (a.size() < 2 || a.size() > bounds.maxOptions)
            return fail(path, QStringLiteral("'%1' must have 2 to %2 descriptions, not %3.")
                                  .arg(path)
                                  .arg(bounds.maxOptions)
                                  .arg(a.size()));
        for (qsizetype i = 0; i < a.size(); ++i)
            if (!description(QStringLiteral("%1[%2]").arg(path).arg(i), a.at(i), false))
                return false;
        return true;
    }
};

} // namespace

std::optional<DecisionRequest> validate(const QJsonObject &body, const DecisionBounds &bounds,
                                        RequestError *error)
{
    Checker c{bounds, error};
    DecisionRequest r;
    const QJsonValue model = body.value("model");
    if (model.isUndefined() || model.isNull()) {
        c.fail(QStringLiteral("model"), QStringLiteral("'model' is required."));
        return std::nullopt;
    }
    if (!model.isString() || model.toString().isEmpty()) {
        c.fail(QStringLiteral("model"), QStringLiteral("'model' must be a non-empty string."));
        return std::nullopt;
    }
    r.model = model.toString();
    const QJsonValue state = body.value("state");
    if (state.isUndefined() || state.isNull()) {
        c.fail(QStringLiteral("state"), QStringLiteral("'state' is required."));
        return std::nullopt;
    }
    const bool empty = (state.isString() && state.toString().isEmpty()) ||
                       (state.isObject() && state.toObject().isEmpty()) ||
                       (state.isArray() && state.toArray().isEmpty());
    if (!(state.isString() || state.isObject() || state.isArray()) || empty) {
        c.fail(QStringLiteral("state"),
               QStringLiteral("'state' must be a non-empty string, object or array."));
        return std::nullopt;
    }
    const QJsonValue questions = body.value("questions");
    if (questions.isUndefined() || questions.isNull()) {
        c.fail(QStringLiteral("questions"), QStringLiteral("'questions' is required."));
        return std::nullopt;
    }
    if (!questions.isObject() || questions.toObject().isEmpty()) {
        c.fail(QStringLiteral("questions"),
               QStringLiteral("'questions' must be a non-empty object of question id to "
                              "question."));
        return std::nullopt;
    }
    const QJsonObject qs = questions.toObject();
    if (qs.size() > bounds.maxQuestions) {
        c.fail(QStringLiteral("questions"),
               QStringLiteral("'questions' has %1 questions; at most %2.")
                   .arg(qs.size())
                   .arg(bounds.maxQuestions));
        return std::nullopt;
    }
    for (auto it = qs.begin(); it != qs.end(); ++it)
        if (!c.question(it.key(), it.value()))
            return std::nullopt;
    r.questions = int(qs.size());
    return r;
}

} // namespace DecisionRequests
