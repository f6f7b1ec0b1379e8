#include "AddressUpstream.h"

#include "ConfigFields.h"
#include "upstream/ProviderAuth.h"
#include "upstream/UpstreamClient.h"

#include <QJsonArray>
#include <QJsonDocument>

AddressUpstreamConfig AddressUpstreamConfig::fromJson(const QJsonObject &json)
{
    AddressUpstreamConfig c;
    if (json.isEmpty())
        return c;
    const ConfigFields f(json, QStringLiteral("address.upstream"));
    c.baseUrl = f.httpUrl(QStringLiteral("base_url"), {}).toUtf8();
    if (c.baseUrl.isEmpty())
        f.fail(QStringLiteral("base_url"), QStringLiteral("must be an http or https URL"));
    if (f.has(QStringLiteral("key_env"))) {
        c.key = qgetenv(f.string(QStringLiteral("key_env"), {}).toLocal8Bit().constData());
        if (c.key.isEmpty())
            f.fail(QStringLiteral("key_env"),
                   QStringLiteral("names an environment variable that is empty or unset"));
    } else {
        c.key = f.string(QStringLiteral("key"), {}).toUtf8();
    }
    QStringList all;
    for (const QString &e : AddressApi::endpoints())
        if (e != u"transfer-coord") // pure arithmetic: nothing to ask anyone
            all.append(e);
    c.endpoints =
        f.strings(QStringLiteral("endpoints"), all, QStringLiteral("an array of endpoint names"));
    for (const QString &e : c.endpoints)
        if (!AddressApi::endpoints().contains(e))
            f.fail(QStringLiteral("endpoints"),
                   QStringLiteral("names an unknown endpoint '%1'").arg(e));
    c.timeoutMs = f.whole(QStringLiteral("timeout_ms"), c.timeoutMs,
                          {100, 120'000, QStringLiteral("milliseconds")});
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
