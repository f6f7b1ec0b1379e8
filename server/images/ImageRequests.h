#pragma once

#include "images/ImageStore.h"
#include "RequestError.h"

#include <functional>
#include <optional>
#include <QJsonObject>
#include <QString>

struct ImagesConfig;

// POST /v1/images/generations as a client sends it (OpenAI's fields plus callbackUrl).
struct ImageRequest
{
    QString model;
    QString prompt;
    int n = 1;
    QString size;    // empty: the upstream's default
    QString quality; // empty: the upstream's default
    QString style;
    QString responseFormat = QStringLiteral("url"); // of the synchronous answer
    QString callbackUrl;
    QString user;
};

namespace ImageRequests {

constexpr int kMaxPromptChars = 32'000;
constexpr int kMaxCallbackUrlChars = 2'048;

// Validates the body; unknown fields are ignored (as OpenAI's SDKs expect of a compatible API).
// On failure returns nothing and fills *error (the message names the field).
std::optional<ImageRequest> parse(const QJsonObject &body, const ImagesConfig &config,
                                  RequestError *error);

// The upstream's JSON: the model's upstream name, prompt, n, and size, quality, style and
// user when given; response_format as the provider is configured.
QByteArray upstreamBody(const ImageRequest &req, const QString &upstreamModel,
                        const QString &responseFormat);

// The parameters kept with the task (image_tasks.params) and read back.
QByteArray paramsJson(const ImageRequest &req);
ImageRequest fromTask(const ImageStore::Task &task);

// "imgtask_" + 24 random base-32 characters; image file ids "img_" + 24.
QString newTaskId();
QString newFileId();

// A link to one image (ImageLinks::url with the family's secret and the task's base).
using LinkMaker = std::function<QString(const ImageStore::ImageFile &file)>;

// The task object of the POST (202) and GET answers and of the callback body: id, object,
// status, model, created_at, started_at, completed_at (Unix seconds, null until known), n,
// images [{id, url, expires_at}] on completed and partial, error (a string) on failed,
// callback {url, status, attempts, last_status, next_attempt_at} when it has a callback URL.
QJsonObject taskJson(const ImageStore::Task &task, const QList<ImageStore::ImageFile> &files,
                     const std::optional<ImageStore::Delivery> &delivery, const LinkMaker &link);

// OpenAI's answer for a synchronous request: {created, data: [{url | b64_json,
// revised_prompt?}], id, status}. b64_json needs files with their data.
QJsonObject openAiJson(const ImageStore::Task &task, const QList<ImageStore::ImageFile> &files,
                       const QString &responseFormat, const LinkMaker &link);

} // namespace ImageRequests
