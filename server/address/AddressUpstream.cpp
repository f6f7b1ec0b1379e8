#include "AddressUpstream.h"

#include "upstream/ProviderAuth.h"
#include "upstream/UpstreamClient.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QUrl>

#include <stdexcept>

AddressUpstreamConfig AddressUpstreamConfig::fromJson(const QJsonObject &json)
{
    AddressUpstreamConfig c;
    if (json.isEmpty())
        return c;
    auto bad = [](const char *what) {
        throw std::runtime_error(std::string("config: address.upstream.") + what);
    };
    const QString base = json.value("base_url").toString();
    const QUrl url(base, QUrl::StrictMode);
    if (!url.isValid() || (url.scheme() != u"http" && url.scheme() != u"https") ||
        url.host().isEmpty())
        bad("base_url must be an http:// or https:// URL");
    c.baseUrl = base.toUtf8();
    while (c.baseUrl.endsWith('/'))
        c.baseUrl.chop(1);
    if (json.contains("key_env")) {
        c.key = qgetenv(json.value("key_env").toString().toLocal8Bit().constData());
        if (c.key.isEmpty())
            bad("key_env names an environment variable that is empty or unset");
    } else {
        c.key = json.value("key").toString().toUtf8();
    }
    const QJsonValue endpoints = json.value("endpoints");
    if (endpoints.isUndefined()) {
        for (const QString &e : AddressApi::endpoints())
            if (e != u"transfer-coord") // pure arithmetic: nothing to ask anyone
                c.endpoints.append(e);
    } else {
        if (!endpoints.isArray())
            bad("endpoints must be an array of endpoint names");
        const QStringList served = AddressApi::endpoints();
        for (const QJsonValue &v : endpoints.toArray()) {
            if (!served.contains(v.toString()))
                throw std::runtime_error("config: address.upstream.endpoints: unknown endpoint '" +
                                         v.toString().toStdString() + "'");
            c.endpoints.append(v.toString());
        }
    }
    if (json.contains("timeout_ms")) {
        const int ms = json.value("timeout_ms").toInt(-1);
        if (ms < 100 || ms > 120'000)
            bad("timeout_ms must be 100..120000");
        c.timeoutMs = ms;
    }
    return c;
}

AddressUpstream::AddressUpstream(AddressUpstreamConfig config, QObject *parent)
    : QObject(parent), m_config(std::move(config)), m_client(new UpstreamClient(this))
{
}

bool AddressUpstream::wants(const QString &endpoint, const AddressApi::Reply &local) const
{
    if (!local.ok() || !m_config.endpoints.contains(endpoint))
        return false;
    const QString status = local.body.value("status").toString();
    return status == u"NOT_FOUND" || status == u"NO_DATA";
}

void AddressUpstream::forward(const ContextPtr &ctx, const QString &endpoint,
                              const AddressApi::Reply &local, qint64 price)
{
    // A client that left gets a 499, so that its hold goes back at once.
    if (ctx->clientGone()) // it left while the engine ran: onClosed has been and gone
        return ctx->respondClientLeft();
    UpstreamRequest request;
    request.url = m_config.baseUrl + "/v1/address/" + endpoint.toUtf8();
    request.headers = {"Content-Type: application/json", "Accept: application/json"};
    if (const QByteArray header = authHeader(ProviderAuth::Bearer, QString::fromUtf8(m_config.key));
        !header.isEmpty())
        request.headers.append(header);
    request.body = ctx->request().body;
    request.connectTimeoutMs = std::min(m_config.timeoutMs, 10'000);
    request.firstByteTimeoutMs = m_config.timeoutMs;
    request.idleTimeoutMs = m_config.timeoutMs;
    request.totalTimeoutMs = m_config.timeoutMs;

    const UpstreamCallPtr call = m_client->start(request);
    auto status = std::make_shared<int>(0);
    auto body = std::make_shared<QByteArray>();
    std::weak_ptr<UpstreamCall> weak = call;
    std::weak_ptr<RequestContext> weakCtx = ctx; // the exchange keeps this; no cycle
    ctx->exchange()->onClosed([weak, weakCtx] {
        const ContextPtr c = weakCtx.lock(); // kept past the abort, which lets go of onDone's
        if (auto call = weak.lock())
            call->abort(); // onDone will not run
        if (c && !c->isAnswered())
            c->respondClientLeft();
    });
    call->onHead = [status](int code, const HttpHeaders &) { *status = code; };
    call->onData = [body, call = std::weak_ptr<UpstreamCall>(call)](const QByteArray &data) {
        body->append(data);
        if (body->size() > 4 * 1024 * 1024) // an address answer is small; this is not one
            if (auto c = call.lock()) {
                // abort() drops onDone unrun: it is run here, as for any other failure, so that
                // the local answer still goes out.
                const auto done = std::move(c->onDone);
                c->abort();
                if (done)
                    done(UpstreamError::Failed, QStringLiteral("its answer is over 4 MiB"));
            }
    };
    // The client keeps the call alive until onDone has run.
    call->onDone = [ctx, status, body, local, price](UpstreamError error, const QString &message) {
        QString problem;
        QJsonObject answer;
        if (error != UpstreamError::None) {
            problem = message;
        } else if (*status != 200) {
            problem = QStringLiteral("it answered HTTP %1").arg(*status);
        } else {
            QJsonParseError parse;
            const QJsonDocument doc = QJsonDocument::fromJson(*body, &parse);
            if (!doc.isObject())
                problem = QStringLiteral("its answer is not a JSON object");
            else if (doc.object().contains("error"))
                problem = QStringLiteral("it answered an error");
            else if (!doc.object().value("status").isString())
                problem = QStringLiteral("its answer has no status");
            else
                answer = doc.object();
        }
        // An upstream that knows no more than we do: the local answer says what to import.
        const QString upstreamStatus = answer.value("status").toString();
        if (problem.isEmpty() && (upstreamStatus == u"NO_DATA" || upstreamStatus == u"NOT_FOUND"))
            problem = QStringLiteral("it had no answer either (%1)").arg(upstreamStatus);
        if (ctx->clientGone())
            return ctx->respondClientLeft();
        if (problem.isEmpty()) {
            ctx->usage().cost = price;
            ctx->respondJson(200, answer, {{"x-address-source", "upstream"}});
            return;
        }
        QJsonObject fallback = local.body;
        const QString note =
            QStringLiteral("The upstream address provider could not answer (%1).").arg(problem);
        const QString before = fallback.value("message").toString();
        fallback.insert("message", before.isEmpty() ? note : before + QLatin1Char(' ') + note);
        if (local.billable)
            ctx->usage().cost = price;
        ctx->respondJson(200, fallback, {{"x-address-source", "local"}});
    };
}
