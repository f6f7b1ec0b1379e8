#include "ImageRequests.h"

#include "ImagesConfig.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QRegularExpression>

namespace ImageRequests {

namespace {

const QStringList &qualities()
{
    static const QStringList q = {QStringLiteral("standard"), QStringLiteral("hd"),
                                  QStringLiteral("low"),      QStringLiteral("medium"),
                                  QStringLiteral("high"),     QStringLiteral("auto")};
    return q;
}

bool validSize(const QString &size)
{
    if (size == u"auto")
        return true;
    static const QRegularExpression pattern(QStringLiteral("^([0-9]{2,4})x([0-9]{2,4})$"));
    const auto m = pattern.match(size);
    if (!m.hasMatch())
        return false;
    const int w = m.captured(1).toInt();
    const int h = m.captured(2).toInt();
    return w >= 64 && w <= 4096 && h >= 64 && h <= 4096;
}

QString randomId(const char *prefix)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
    QString id = QLatin1String(prefix);
    for (int i = 0; i < 24; ++i)
        id += QLatin1Char(alphabet[QRandomGenerator::system()->bounded(32)]);
    return id;
}

QJsonValue seconds(qint64 ms)
{
    return ms > 0 ? QJsonValue(ms / 1000) : QJsonValue();
}

bool fail(RequestError *error, const QString &param, const QString &message,
          const QString &code = {})
{
    *error = {400, message, param, code};
    return false;
}

// An optional string field; false (and *error) when present with another type.
bool optionalString(const QJsonObject &body, const char *field, QString *out, RequestError *error)
{
    const QJsonValue v = body.value(QLatin1String(field));
    if (v.isUndefined() || v.isNull())
        return true;
    if (!v.isString())
        return fail(error, QLatin1String(field),
                    QStringLiteral("'%1' must be a string.").arg(QLatin1String(field)));
    *out = v.toString();
    return true;
}

} // namespace

std::optional<ImageRequest> parse(const QJsonObject &body, const ImagesConfig &config,
                                  RequestError *error)
{
    ImageRequest r;
    const QJsonValue prompt = body.value("prompt");
    if (prompt.isUndefined() || prompt.isNull()) {
        fail(error, QStringLiteral("prompt"), QStringLiteral("'prompt' is required."));
        return std::nullopt;
    }
    if (!prompt.isString() || prompt.toString().trimmed().isEmpty()) {
        fail(error, QStringLiteral("prompt"),
             QStringLiteral("'prompt' must be a non-empty string."));
        return std::nullopt;
    }
    r.prompt = prompt.toString();
    if (r.prompt.size() > kMaxPromptChars) {
        fail(error, QStringLiteral("prompt"),
             QStringLiteral("'prompt' is too long: %1 characters, at most %2.")
                 .arg(r.prompt.size())
                 .arg(kMaxPromptChars));
        return std::nullopt;
    }
    r.model = config.defaultModel;
    if (!optionalString(body, "model", &r.model, error))
        return std::nullopt;
    if (!config.model(r.model)) {
        QStringList ids;
        for (const ImageModel &m : config.models)
            ids.append(m.id);
        fail(error, QStringLiteral("model"),
             QStringLiteral("The model '%1' does not exist or is not an image model (%2).")
                 .arg(r.model, ids.join(u", ")),
             QStringLiteral("model_not_found"));
        return std::nullopt;
    }
    const QJsonValue n = body.value("n");
    if (!n.isUndefined() && !n.isNull()) {
        const double d = n.toDouble(-1);
        if (!n.isDouble() || d != std::floor(d) || d < 1 || d > 10) {
            fail(error, QStringLiteral("n"),
                 QStringLiteral("'n' must be an integer from 1 to 10."));
            return std::nullopt;
        }
        r.n = int(d);
    }
    if (!optionalString(body, "size", &r.size, error))
        return std::nullopt;
    if (!r.size.isEmpty() && !validSize(r.size)) {
        fail(error, QStringLiteral("size"),
             QStringLiteral("'size' must be WIDTHxHEIGHT (64 to 4096 each, e.g. 1024x1024) or "
                            "auto, not '%1'.")
                 .arg(r.size.left(40)));
        return std::nullopt;
    }
    if (!optionalString(body, "quality", &r.quality, error))
        return std::nullopt;
    if (!r.quality.isEmpty() && !qualities().contains(r.quality)) {
        fail(error, QStringLiteral("quality"),
             QStringLiteral("'quality' must be one of %1.").arg(qualities().join(u", ")));
        return std::nullopt;
    }
    if (!optionalString(body, "style", &r.style, error))
        return std::nullopt;
    if (!r.style.isEmpty() && r.style != u"vivid" && r.style != u"natural") {
        fail(error, QStringLiteral("style"), QStringLiteral("'style' must be vivid or natural."));
        return std::nullopt;
    }
    if (!optionalString(body, "response_format", &r.responseFormat, error))
        return std::nullopt;
    if (r.responseFormat != u"url" && r.responseFormat != u"b64_json") {
        fail(error, QStringLiteral("response_format"),
             QStringLiteral("'response_format' must be url or b64_json."));
        return std::nullopt;
    }
    if (!optionalString(body, "user", &r.user, error))
        return std::nullopt;
    if (!optionalString(body, "callbackUrl", &r.callbackUrl, error))
        return std::nullopt;
    if (body.contains("callbackUrl") && r.callbackUrl.trimmed().isEmpty()) {
        fail(error, QStringLiteral("callbackUrl"),
             QStringLiteral("'callbackUrl' must be a non-empty https URL."));
        return std::nullopt;
    }
    if (r.callbackUrl.size() > kMaxCallbackUrlChars) {
        fail(error, QStringLiteral("callbackUrl"),
             QStringLiteral("'callbackUrl' is longer than %1 characters.")
                 .arg(kMaxCallbackUrlChars));
        return std::nullopt;
    }
    return r;
}

QByteArray upstreamBody(const ImageRequest &req, const QString &upstreamModel,
                        const QString &responseFormat)
{
    QJsonObject o{{"model", upstreamModel},
                  {"prompt", req.prompt},
                  {"n", req.n},
                  {"response_format", responseFormat}};
    if (!req.size.isEmpty())
        o.insert("size", req.size);
    if (!req.quality.isEmpty())
        o.insert("quality", req.quality);
    if (!req.style.isEmpty())
        o.insert("style", req.style);
    if (!req.user.isEmpty())
        o.insert("user", req.user);
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

QByteArray paramsJson(const ImageRequest &req)
{
    QJsonObject o{{"n", req.n}, {"response_format", req.responseFormat}};
    for (const auto &[key, value] : {std::pair{"size", req.size}, std::pair{"quality", req.quality},
                                     std::pair{"style", req.style}, std::pair{"user", req.user}})
        if (!value.isEmpty())
            o.insert(QLatin1String(key), value);
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

ImageRequest fromTask(const ImageStore::Task &task)
{
    const QJsonObject o = QJsonDocument::fromJson(task.params).object();
    ImageRequest r;
    r.model = task.model;
    r.prompt = task.prompt;
    r.n = task.n;
    r.size = o.value("size").toString();
    r.quality = o.value("quality").toString();
    r.style = o.value("style").toString();
    r.user = o.value("user").toString();
    r.responseFormat = o.value("response_format").toString(QStringLiteral("url"));
    r.callbackUrl = task.callbackUrl;
    return r;
}

QString newTaskId()
{
    return randomId("imgtask_");
}

QString newFileId()
{
    return randomId("img_");
}

QJsonObject taskJson(const ImageStore::Task &task, const QList<ImageStore::ImageFile> &files,
                     const std::optional<ImageStore::Delivery> &delivery, const LinkMaker &link)
{
    QJsonObject o{{"id", task.id},
                  {"object", "image.generation.task"},
                  {"status", task.status},
                  {"model", task.model},
                  {"n", task.n},
                  {"created_at", seconds(task.createdMs)},
                  {"started_at", seconds(task.startedMs)},
                  {"completed_at", seconds(task.completedMs)}};
    if (task.status == u"completed" || task.status == u"partial") {
        QJsonArray images;
        for (const ImageStore::ImageFile &f : files)
            images.append(
                QJsonObject{{"id", f.id}, {"url", link(f)}, {"expires_at", f.expiresMs / 1000}});
        o.insert("images", images);
    }
    if (task.status == u"failed")
        o.insert("error", task.error);
    if (!task.callbackUrl.isEmpty()) {
        QJsonObject cb{{"url", task.callbackUrl}};
        if (delivery) {
            cb.insert("status", delivery->status);
            cb.insert("attempts", delivery->attempts);
            cb.insert("last_status",
                      delivery->attempts > 0 ? QJsonValue(delivery->lastStatus) : QJsonValue());
            cb.insert("next_attempt_at", delivery->status == u"pending"
                                             ? QJsonValue(delivery->nextMs / 1000)
                                             : QJsonValue());
        } else {
            cb.insert("status", QStringLiteral("waiting")); // the task has not ended yet
            cb.insert("attempts", 0);
        }
        o.insert("callback", cb);
    }
    return o;
}

QJsonObject openAiJson(const ImageStore::Task &task, const QList<ImageStore::ImageFile> &files,
                       const QString &responseFormat, const LinkMaker &link)
{
    QJsonArray data;
    for (const ImageStore::ImageFile &f : files) {
        QJsonObject item;
        if (responseFormat == u"b64_json")
            item.insert("b64_json", QString::fromLatin1(f.data.toBase64()));
        else
            item.insert("url", link(f));
        if (!f.revisedPrompt.isEmpty())
            item.insert("revised_prompt", f.revisedPrompt);
        data.append(item);
    }
    return {{"created", (task.completedMs ? task.completedMs : task.createdMs) / 1000},
            {"data", data},
            {"id", task.id},
            {"status", task.status}};
}

} // namespace ImageRequests
