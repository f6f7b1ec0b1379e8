#include "RequestContext.h"

#include "CompactJson.h"
#include "JobQueue.h"
#include "Pipeline.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QRandomGenerator>

namespace {

// "req_", 12 hex digits of milliseconds since the epoch, 16 of a random 64-bit number. Time
// first, so that the ledger's unique index on request ids grows at its right edge: with random
// ids every charge of a settlement batch dirtied its own index page, which the WAL then carried
// (tests/bench/README.md, "The charge path").
QString newRequestId()
{
    static constexpr char kHex[] = "0123456789abcdef";
    const quint64 ms = quint64(QDateTime::currentMSecsSinceEpoch());
    const quint64 random = QRandomGenerator::global()->generate64();
    char16_t id[4 + 12 + 16] = {u'r', u'e', u'q', u'_'};
    for (int i = 0; i < 12; ++i)
        id[4 + i] = char16_t(kHex[(ms >> (44 - 4 * i)) & 0xf]);
    for (int i = 0; i < 16; ++i)
        id[16 + i] = char16_t(kHex[(random >> (60 - 4 * i)) & 0xf]);
    return QString(reinterpret_cast<const QChar *>(id), qsizetype(std::size(id)));
}

} // namespace

RequestContext::RequestContext(Pipeline &pipeline, ExchangePtr exchange)
    : m_pipeline(pipeline), m_pipelineAlive(&pipeline), m_exchange(std::move(exchange)),
      m_requestId(newRequestId())
{
    m_timer.start();
    m_style = pipeline.errorStyleForPath(m_exchange->request().path);
}

RequestContext::~RequestContext()
{
    if ((m_reserved > 0 || m_budgetHeld > 0) && m_pipelineAlive)
        m_pipelineAlive->releaseLeftHold(m_identity.accountId, m_reserved, m_identity.keyId,
                                         m_budgetHeld);
}

std::optional<QJsonObject> RequestContext::jsonBody()
{
    QString error;
    std::optional<QJsonObject> object = parseJsonObject(request().body, &error);
    if (!object)
        respondError(400, error);
    return object;
}

std::optional<QJsonObject> RequestContext::parseJsonObject(const QByteArray &body, QString *error)
{
    if (body.trimmed().isEmpty()) {
        *error = QStringLiteral("The request body is empty; expected a JSON object.");
        return std::nullopt;
    }
    QJsonParseError parse;
    const QJsonDocument doc = QJsonDocument::fromJson(body, &parse);
    if (parse.error != QJsonParseError::NoError) {
        *error = QStringLiteral("Malformed JSON body at byte %1: %2.")
                     .arg(parse.offset)
                     .arg(parse.errorString());
        return std::nullopt;
    }
    if (!doc.isObject()) {
        *error = QStringLiteral("The request body must be a JSON object.");
        return std::nullopt;
    }
    return doc.object();
}

void RequestContext::respondJson(int status, const QJsonValue &body, HttpHeaders extra)
{
    QByteArray bytes;
    if (body.isObject())
        bytes = CompactJson::encode(body.toObject());
    else if (body.isArray())
        bytes = CompactJson::encode(body.toArray());
    respondRaw(status, QByteArrayLiteral("application/json"), bytes, std::move(extra));
}

void RequestContext::respondRaw(int status, const QByteArray &contentType, const QByteArray &body,
                                HttpHeaders extra)
{
    if (m_answered)
        return;
    m_answered = true;
    extra.prepend({QByteArrayLiteral("Content-Type"), contentType});
    m_pipeline.complete(shared_from_this(), status, std::move(extra), body);
}

void RequestContext::respondError(int status, const QString &message, const QString &type,
                                  const QString &param, const QString &code, HttpHeaders extra)
{
    respondRaw(status, "application/json",
               ErrorEnvelope::body(m_style, status, message, type, param, code), std::move(extra));
}

void RequestContext::respondClientLeft()
{
    respondError(499, QStringLiteral("The client closed the request."));
}

bool RequestContext::allowsModel(const QString &model)
{
    if (m_identity.rules.allowsModel(model))
        return true;
    respondError(403,
                 QStringLiteral("This API key may not use the model '%1' (it may use: %2).")
                     .arg(model, m_identity.rules.models.join(u", ")),
                 QStringLiteral("permission_error"), QStringLiteral("model"),
                 QStringLiteral("model_not_allowed"));
    return false;
}

void RequestContext::respondBusy(const JobQueue &queue, const QString &what)
{
    const int after = queue.retryAfterSeconds();
    respondRaw(503, "application/json",
               ErrorEnvelope::body(errorStyle(), 503,
                                   QStringLiteral("%1 are busy (%2 requests running or waiting); "
                                                  "retry in %3 s.")
                                       .arg(what)
                                       .arg(queue.pending())
                                       .arg(after),
                                   {}, {}, QStringLiteral("engine_busy")),
               {{"Retry-After", QByteArray::number(after)}});
}

void RequestContext::reserve(qint64 amount, std::function<void()> then)
{
    m_pipeline.reserve(shared_from_this(), amount, std::move(then));
}

void RequestContext::releaseHold()
{
    m_pipeline.releaseCreditHold(shared_from_this());
}

void RequestContext::startStream(int status, HttpHeaders extra)
{
    if (m_answered)
        return;
    m_answered = true;
    m_streaming = true;
    m_pipeline.startStream(shared_from_this(), status, std::move(extra));
}

void RequestContext::writeStream(const QByteArray &bytes)
{
    if (m_streaming)
        m_exchange->writeChunk(bytes);
}

void RequestContext::finishStream(const QByteArray &tail, const QByteArray &failedTail)
{
    if (!m_streaming)
        return;
    m_streaming = false;
    m_pipeline.finishStream(shared_from_this(), tail, failedTail);
}
