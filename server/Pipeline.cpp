#include "Pipeline.h"

#include "DatabaseService.h"
#include "http/HttpRequestReader.h"
#include "Money.h"
#include "Secrets.h"

#include <QDateTime>
#include <QThread>

namespace {

// The credential a request presents: "Authorization: Bearer X", else X-API-Key (any case).
QString presentedCredential(const HttpRequest &r)
{
    const QByteArray auth = r.header("authorization");
    if (auth.compare("bearer", Qt::CaseInsensitive) == 0)
        return {}; // "Bearer" with nothing after it: no credential
    if (!auth.isEmpty()) {
        if (auth.size() > 7 && auth.left(7).compare("bearer ", Qt::CaseInsensitive) == 0)
            return QString::fromLatin1(auth.mid(7).trimmed());
        return QStringLiteral("\x01"); // some other scheme: malformed for us
    }
    return QString::fromLatin1(r.header("x-api-key").trimmed());
}

QString familyLabel(const ContextPtr &ctx)
{
    return ctx->route() ? ctx->route()->family : QStringLiteral("unmatched");
}

} // namespace

Pipeline::Pipeline(DatabaseService &db, const ServerSettings &settings, QObject *parent)
    : QObject(parent), m_db(db), m_settings(settings), m_auth(db, settings.authCacheMs, this),
      m_credits(db, this, settings.balanceFreshMs),
      m_budgets(db, settings.budgetZone, settings.balanceFreshMs, this)
{
    if (settings.alerts.any()) {
        m_alerts = new Alerts(db, settings.alerts, m_budgets, this);
        connect(m_alerts, &Alerts::fired, this, &Pipeline::alertFired);
    }
    m_clock.start();
    if (settings.sharedState && db.hasShared()) {
        SharedState::Options options;
        options.timeoutMs = settings.sharedTimeoutMs;
        options.aliveMs = settings.instanceAliveMs;
        m_shared = std::make_unique<SharedState>(db, options, this);
        m_shared->start();
        m_credits.setShared(m_shared.get());
        m_budgets.setShared(m_shared.get());
        m_metrics.addCollector([shared = m_shared.get()](Metrics &m) { shared->collect(m); });
    }
}

void Pipeline::addErrorPrefix(const QString &prefix, ErrorStyle style)
{
    m_errorPrefixes.append({prefix, style});
}

ErrorStyle Pipeline::errorStyleForPath(const QString &path) const
{
    ErrorStyle style;
    qsizetype longest = -1;
    for (const auto &[prefix, s] : m_errorPrefixes) {
        const bool under =
            path.startsWith(prefix) && (path.size() == prefix.size() || prefix.endsWith(u'/') ||
                                        path.at(prefix.size()) == u'/');
        if (prefix.size() > longest && under) {
            longest = prefix.size();
            style = s;
        }
    }
    return style;
}

qint64 Pipeline::bodyLimit(const RouteSpec &route) const
{
    if (route.bodyLimit > 0)
        return route.bodyLimit;
    return route.upload ? m_settings.maxUploadBody : m_settings.maxJsonBody;
}

QString Pipeline::tooLarge(const RouteSpec *route, const QString &message)
{
    return route && !route->tooLarge.isEmpty() ? route->tooLarge + u' ' + message : message;
}

void Pipeline::reject(const ExchangePtr &exchange, int status, const QString &message)
{
    auto ctx = std::make_shared<RequestContext>(*this, exchange);
    // Refused before routing (limits): still in the envelope of the route it was meant for.
    const RouteSpec *route = m_router.anyForPath(exchange->request().path);
    if (route)
        ctx->m_style = route->errorStyle;
    ctx->respondError(status, status == 413 ? tooLarge(route, message) : message);
}

void Pipeline::head(const ExchangePtr &exchange)
{
    auto ctx = std::make_shared<RequestContext>(*this, exchange);
    const HttpRequest &req = exchange->request();
    Router::Match m = m_router.match(req.method, req.path);
    if (!m.route) {
        if (!m.allowedMethods.isEmpty()) {
            ctx->m_style = m_router.anyForPath(req.path)->errorStyle; // the path's own routes'
            ctx->m_rateHeaders.append({"Allow", m.allowedMethods.join(u", ").toLatin1()});
            ctx->respondError(405, QStringLiteral("Method %1 is not allowed on %2; use %3.")
                                       .arg(QString::fromLatin1(req.method), req.path,
                                            m.allowedMethods.join(QStringLiteral(" or "))));
        } else {
            ctx->respondError(404, QStringLiteral("Unknown route: %1 %2")
                                       .arg(QString::fromLatin1(req.method), req.path));
        }
        return;
    }
    ctx->m_route = m.route;
    ctx->m_style = m.route->errorStyle;
    ctx->m_params = std::move(m.params);
    const qint64 limit = bodyLimit(*m.route);
    if (req.bodyLength > limit) {
        ctx->respondError(
            413, tooLarge(m.route, HttpRequestReader::tooLargeMessage(req.bodyLength, limit)));
        return;
    }
    if (m.route->auth == AuthMode::Public) {
        readBody(ctx);
        return;
    }
    authenticate(ctx);
}

void Pipeline::readBody(const ContextPtr &ctx)
{
    ctx->exchange()->readBody(bodyLimit(*ctx->route()), [this, ctx] {
        // The writer waits for expected settlements (DatabaseService::expectSettlement): taken
        // now, not at the head, so that a body still arriving keeps none out.
        if (ctx->identity().kind == AuthMode::ApiKey)
            ctx->m_settlement = m_db.expectSettlement();
        run(ctx);
    });
}

void Pipeline::authenticate(const ContextPtr &ctx)
{
    const RouteSpec &route = *ctx->route();
    const QString secret = presentedCredential(ctx->request());
    const bool wantToken = route.auth == AuthMode::ControlToken;
    if (secret.isEmpty()) {
        ctx->respondError(
            401, wantToken
                     ? QStringLiteral(
                           "Missing control token. Send 'Authorization: Bearer lpc_...' with a "
                           "token that has the '%1' scope.")
                           .arg(route.scope)
                     : QStringLiteral("Missing API key. Send 'Authorization: Bearer sk-...' or "
                                      "'X-API-Key: sk-...'."));
        return;
    }
    if (wantToken && secret.startsWith(Secrets::kApiKeyPrefix)) {
        ctx->respondError(401, QStringLiteral("API keys (sk-) are not accepted on /api/v1; use a "
                                              "control token (lpc_) with the '%1' scope.")
                                   .arg(route.scope));
        return;
    }
    if (!wantToken && secret.startsWith(Secrets::kControlTokenPrefix)) {
        ctx->respondError(401, QStringLiteral("Control tokens (lpc_) are not accepted here; use "
                                              "an API key (sk-)."));
        return;
    }
    const auto prefix = wantToken ? Secrets::kControlTokenPrefix : Secrets::kApiKeyPrefix;
    if (!Secrets::looksValid(secret, prefix)) {
        ctx->respondError(401, wantToken ? QStringLiteral("Malformed control token.")
                                         : QStringLiteral("Malformed API key."));
        return;
    }
    auto done = [this, ctx](const Authenticator::Record &record, const QString &error) {
        if (!error.isEmpty()) {
            ctx->respondError(503, QStringLiteral("The credential store is unavailable; try "
                                                  "again shortly."));
            return;
        }
        authorized(ctx, record);
    };
    if (wantToken)
        m_auth.lookupControlToken(secret, std::move(done));
    else
        m_auth.lookupApiKey(secret, std::move(done));
}

void Pipeline::authorized(const ContextPtr &ctx, const Authenticator::Record &record)
{
    const RouteSpec &route = *ctx->route();
    const QDateTime now = QDateTime::currentDateTimeUtc();
    Identity &id = ctx->m_identity;
    if (route.auth == AuthMode::ApiKey) {
        const auto *key = std::get_if<ApiKeyRecord>(&record);
        if (!key) {
            ctx->respondError(401, QStringLiteral("Invalid API key."));
            return;
        }
        if (key->isRevoked()) {
            ctx->respondError(401, QStringLiteral("This API key has been revoked."));
            return;
        }
        id = Identity{AuthMode::ApiKey, key->accountId, key->id, 0, key->tier, {}, key->rules};
        if (!key->rules.isEmpty() && !keyRulesAllow(ctx, *key))
            return;
    } else {
        const auto *token = std::get_if<ControlTokenRecord>(&record);
        if (!token) {
            ctx->respondError(401, QStringLiteral("Invalid control token."));
            return;
        }
        if (token->isRevoked()) {
            ctx->respondError(401, QStringLiteral("This control token has been revoked."));
            return;
        }
        if (token->isExpired(now)) {
            ctx->respondError(401, QStringLiteral("This control token expired on %1.")
                                       .arg(token->expires.toString(Qt::ISODate)));
            return;
        }
        id = Identity{AuthMode::ControlToken,    token->accountId, 0, token->id,
                      QStringLiteral("default"), token->scopes,    {}};
        if (!route.scope.isEmpty() && !token->scopes.contains(route.scope)) {
            ctx->respondError(
                403, QStringLiteral("This control token lacks the '%1' scope "
                                    "needed for %2 %3.")
                         .arg(route.scope, QString::fromLatin1(route.method), route.pattern));
            return;
        }
    }
    m_auth.noteUse(record);

    // Step 3: rate limit per credential and bucket (no bucket to find when unlimited).
    const int limit = m_settings.tier(id.tier).limitFor(route.bucket);
    const QByteArray bucketKey = limit <= 0 ? QByteArray()
                                            : (id.keyId ? "k" + QByteArray::number(id.keyId)
                                                        : "t" + QByteArray::number(id.tokenId)) +
                                                  ':' + route.bucket.toUtf8();
    if (m_shared) {
        // Steps 3 and 4 in one call to the shared state: the token and, if it allows, the holds.
        const qint64 amount = id.kind == AuthMode::ApiKey ? route.reservation : 0;
        if (limit <= 0 && amount <= 0) {
            readBody(ctx);
            return;
        }
        holdShared(ctx, bucketKey, limit, amount, [this, ctx] { readBody(ctx); });
        return;
    }
    if (limit > 0 && !rated(ctx, m_rates.take(bucketKey, limit, m_clock.elapsed())))
        return;
    admit(ctx);
}

bool Pipeline::rated(const ContextPtr &ctx, const RateLimiter::Decision &d)
{
    const RouteSpec &route = *ctx->route();
    const qint64 resetEpochSeconds =
        (QDateTime::currentMSecsSinceEpoch() + d.resetInMs + 999) / 1000;
    ctx->m_rateHeaders = {{"X-RateLimit-Limit", QByteArray::number(d.limit)},
                          {"X-RateLimit-Remaining", QByteArray::number(d.remaining)},
                          {"X-RateLimit-Reset", QByteArray::number(resetEpochSeconds)}};
    if (!d.allowed) {
        ctx->m_rateHeaders.append({"Retry-After", QByteArray::number(d.retryAfterSeconds)});
        ctx->respondError(429, QStringLiteral("Rate limit of %1 requests per minute reached for "
                                              "the '%2' bucket; retry in %3 s.")
                                   .arg(d.limit)
                                   .arg(route.bucket)
                                   .arg(d.retryAfterSeconds));
        return false;
    }
    return true;
}

void Pipeline::admit(const ContextPtr &ctx)
{
    reserve(ctx, ctx->route()->reservation, [this, ctx] { readBody(ctx); });
}

void Pipeline::reserve(const ContextPtr &ctx, qint64 amount, std::function<void()> then)
{
    if (amount <= 0 || ctx->identity().kind != AuthMode::ApiKey) {
        then();
        return;
    }
    if (m_shared) {
        holdShared(ctx, {}, 0, amount, std::move(then));
        return;
    }
    if (!ctx->identity().rules.budget) {
        holdCredit(ctx, amount, std::move(then));
        return;
    }
    holdBudget(ctx, amount, [this, ctx, amount, then = std::move(then)]() mutable {
        holdCredit(ctx, amount, std::move(then));
    });
}

void Pipeline::holdBudget(const ContextPtr &ctx, qint64 amount, std::function<void()> then)
{
    const Identity &id = ctx->identity();
    m_budgets.admit(id.keyId, *id.rules.budget, amount, this,
                    [this, ctx, amount, then = std::move(then)](KeyBudgets::Outcome o,
                                                                const KeyBudgets::State &state) {
                        const qint64 keyId = ctx->identity().keyId;
                        if (ctx->isAnswered()) { // answered meanwhile: the hold goes back at once
                            if (o == KeyBudgets::Outcome::Admitted)
                                m_budgets.release(keyId, amount);
                            return;
                        }
                        if (o == KeyBudgets::Outcome::Unavailable) {
                            ctx->respondError(
                                503, QStringLiteral("The key's spending cannot be read; try "
                                                    "again shortly. Nothing was charged."));
                            return;
                        }
                        if (o == KeyBudgets::Outcome::Exceeded) {
                            refuseBudget(ctx, amount, state.spent, state.held, state.end);
                            return;
                        }
                        ctx->m_budgetHeld += amount;
                        then();
                    });
}

void Pipeline::refuseBudget(const ContextPtr &ctx, qint64 amount, qint64 spent, qint64 held,
                            const QDateTime &end)
{
    const KeyRules::Budget &budget = *ctx->identity().rules.budget;
    const QString resets =
        end.isValid() ? QStringLiteral("; it resets at %1").arg(end.toUTC().toString(Qt::ISODate))
                      : QStringLiteral("; it does not reset (a total budget)");
    ctx->respondError(
        402,
        QStringLiteral("This API key's budget of %1 credits per %2 is used up: %3 "
                       "spent and %4 held by requests in progress, and this "
                       "request needs at least %5%6.")
            .arg(Money::formatCredits(budget.amount), KeyRules::periodName(budget.period),
                 Money::formatCredits(spent), Money::formatCredits(held - ctx->m_budgetHeld),
                 Money::formatCredits(amount + ctx->m_budgetHeld), resets),
        QStringLiteral("insufficient_credits"), {}, QStringLiteral("key_budget_exceeded"));
}

void Pipeline::holdShared(const ContextPtr &ctx, const QByteArray &bucketKey, int limit,
                          qint64 amount, std::function<void()> then)
{
    const Identity &id = ctx->identity();
    Store::SharedCall call{QString::fromLatin1(bucketKey), limit, id.accountId, amount};
    QDateTime end;
    if (amount > 0 && id.rules.budget) {
        const auto [start, periodEnd] =
            KeyRules::periodAt(id.rules.budget->period, m_budgets.now(), m_budgets.zone());
        end = periodEnd;
        call.keyId = id.keyId;
        call.budget = id.rules.budget->amount;
        call.fromMs = start.toMSecsSinceEpoch();
        call.toMs = end.isValid() ? end.toMSecsSinceEpoch() : 0;
    }
    m_shared->admit(
        call, [this, ctx, call, end, then = std::move(then)](const SharedState::Answer &a) {
            const bool admitted =
                call.amount > 0 && a.rate.allowed && a.outcome == CreditGate::Outcome::Admitted;
            if (ctx->isAnswered()) { // the client left meanwhile: the holds go back at once
                if (admitted)
                    m_shared->release(call);
                return;
            }
            if (call.perMinute > 0 && !rated(ctx, a.rate))
                return;
            if (call.amount <= 0) {
                then();
                return;
            }
            if (!a.withinBudget) {
                refuseBudget(ctx, call.amount, a.keySpent, a.keyHeld, end);
                return;
            }
            if (admitted && call.keyId > 0)
                ctx->m_budgetHeld += call.amount;
            held(ctx, call.amount, a.outcome, a.balance, a.held, then);
        });
}

void Pipeline::holdCredit(const ContextPtr &ctx, qint64 amount, std::function<void()> then)
{
    m_credits.admit(ctx->identity().accountId, amount, this,
                    [this, ctx, amount, then = std::move(then)](CreditGate::Outcome o,
                                                                qint64 balance, qint64 held) {
                        if (ctx->isAnswered()) {
                            // Answered meanwhile (the client left, a timeout): the hold goes
                            // back at once.
                            if (o == CreditGate::Outcome::Admitted)
                                m_credits.release(ctx->identity().accountId, amount);
                            return;
                        }
                        this->held(ctx, amount, o, balance, held, then);
                    });
}

void Pipeline::held(const ContextPtr &ctx, qint64 amount, CreditGate::Outcome o, qint64 balance,
                    qint64 held, const std::function<void()> &then)
{
    if (o == CreditGate::Outcome::Unavailable) {
        if (m_shared)
            ctx->respondError(503,
                              QStringLiteral("The state the instances share (credit holds) "
                                             "cannot be reached; nothing was charged. Try again "
                                             "shortly."),
                              {}, {}, QStringLiteral("shared_state_unavailable"));
        else
            ctx->respondError(503, QStringLiteral("The credit store is unavailable; try again."));
        return;
    }
    if (o == CreditGate::Outcome::Insufficient) {
        ctx->respondError(
            402,
            QStringLiteral("Insufficient credits: the balance is %1 with %2 held by "
                           "requests in progress, and this request needs at least %3.")
                .arg(Money::formatCredits(balance), Money::formatCredits(held - ctx->m_reserved),
                     Money::formatCredits(amount + ctx->m_reserved)));
        return;
    }
    ctx->m_reserved += amount;
    if (ctx->clientGone()) {
        // It left while its credit was read: nothing to do, and the 499 hands the hold back.
        ctx->respondClientLeft();
        return;
    }
    then();
}

void Pipeline::run(const ContextPtr &ctx)
{
    try {
        ctx->route()->handler(ctx);
    } catch (const std::exception &e) {
        qWarning("handler for %s failed: %s", qPrintable(ctx->route()->pattern), e.what());
        ctx->respondError(500,
                          QStringLiteral("Internal error; request id %1.").arg(ctx->requestId()));
    }
}

void Pipeline::complete(const ContextPtr &ctx, int status, HttpHeaders headers,
                        const QByteArray &body)
{
    appendIdHeaders(ctx, &headers);
    const Identity &id = ctx->identity();
    UsageRecord &u = ctx->usage();
    const bool metered = id.kind == AuthMode::ApiKey;
    stampUsage(ctx, status);
    if (metered && u.cost > 0 && status < 400) {
        // Billed: the charge and usage record commit before the answer leaves. The hold goes
        // once the balance the charge left is known (noteCharge), not before: a request
        // admitted in between, on the balance from before the charge, could overdraw.
        u.latencyMs = int(ctx->elapsedMs());
        m_db.settle(
            this, u,
            [this, ctx, status, headers, body](const DbResult<ChargeResult> &r) {
                releaseHold(ctx);
                if (!r.ok()) {
                    qWarning("settlement of %s failed: %s", qPrintable(ctx->requestId()),
                             qPrintable(r.error));
                    write(ctx, 503,
                          {{"Content-Type", "application/json"},
                           {"X-Request-Id", ctx->requestId().toLatin1()}},
                          ErrorEnvelope::body(ctx->errorStyle(), 503,
                                              QStringLiteral("Billing could not be recorded; the "
                                                             "request was not charged.")));
                    return;
                }
                noteCharge(r.value);
                noteSpent(ctx);
                write(ctx, status, headers, body);
            },
            std::move(ctx->m_settlement));
        return;
    }
    releaseHold(ctx);
    write(ctx, status, std::move(headers), body);
    if (metered) {
        u.cost = 0;
        u.latencyMs = int(ctx->elapsedMs());
        m_db.recordUsage(u, std::move(ctx->m_settlement));
    }
}

void Pipeline::noteCharge(const ChargeResult &charge)
{
    if (charge.status == ChargeResult::Status::Committed && charge.entry.id)
        m_credits.noteBalance(charge.entry.accountId, charge.entry.balanceAfter, charge.entry.id);
}

void Pipeline::appendIdHeaders(const ContextPtr &ctx, HttpHeaders *headers)
{
    const QByteArray id = ctx->requestId().toLatin1();
    // Literals, so that the names are not allocated for every answer.
    headers->append({QByteArrayLiteral("X-Request-Id"), id});
    // The envelope's own (a protocol that names the request id its own way).
    ctx->errorStyle().writer().addHeaders(id, headers);
    headers->append(ctx->m_rateHeaders);
}

void Pipeline::stampUsage(const ContextPtr &ctx, int status)
{
    const Identity &id = ctx->identity();
    UsageRecord &u = ctx->usage();
    if (id.kind == AuthMode::ApiKey) {
        u.accountId = id.accountId;
        u.keyId = id.keyId;
        u.time = m_budgets.now(); // the clock budget periods are reckoned by
        if (u.endpoint.isEmpty())
            u.endpoint = ctx->request().path;
        u.status = status;
        u.requestId = ctx->requestId();
    }
}

void Pipeline::releaseCreditHold(const ContextPtr &ctx)
{
    if (ctx->m_reserved > 0) {
        m_credits.release(ctx->identity().accountId, ctx->m_reserved);
        ctx->m_reserved = 0;
    }
}

void Pipeline::releaseHold(const ContextPtr &ctx)
{
    releaseCreditHold(ctx);
    if (ctx->m_budgetHeld > 0) {
        m_budgets.release(ctx->identity().keyId, ctx->m_budgetHeld);
        ctx->m_budgetHeld = 0;
    }
}

void Pipeline::noteSpent(const ContextPtr &ctx)
{
    if (ctx->identity().rules.budget)
        m_budgets.charged(ctx->identity().keyId, ctx->usage().cost, ctx->usage().time);
}

bool Pipeline::keyRulesAllow(const ContextPtr &ctx, const ApiKeyRecord &key)
{
    const QDateTime now = m_budgets.now();
    if (key.rules.isExpired(now)) {
        ctx->respondError(401,
                          QStringLiteral("This API key expired at %1.")
                              .arg(key.rules.expires.toUTC().toString(Qt::ISODate)),
                          {}, {}, QStringLiteral("key_expired"));
        return false;
    }
    if (!key.rules.allowedIps.isEmpty()) {
        const QHostAddress client = clientAddress(ctx->request());
        if (!key.rules.allowsAddress(client)) {
            ctx->respondError(
                403, QStringLiteral("This API key may not be used from %1.").arg(client.toString()),
                QStringLiteral("permission_error"), {}, QStringLiteral("ip_not_allowed"));
            return false;
        }
    }
    return true;
}

QHostAddress Pipeline::clientAddress(const HttpRequest &request) const
{
    // The peer, unless it is a trusted proxy: then the nearest address in X-Forwarded-For that
    // is not one (each proxy appends the address it heard from).
    QHostAddress client = request.peer;
    if (m_settings.trustedProxies.isEmpty() || !KeyRules::inAny(m_settings.trustedProxies, client))
        return client;
    const QList<QByteArray> hops = request.header("x-forwarded-for").split(',');
    for (qsizetype i = hops.size() - 1; i >= 0; --i) {
        const QHostAddress hop(QString::fromLatin1(hops[i].trimmed()));
        if (hop.isNull())
            break; // not an address: stop at what can be believed
        client = hop;
        if (!KeyRules::inAny(m_settings.trustedProxies, hop))
            break;
    }
    return client;
}

Pipeline::~Pipeline()
{
    m_closing = true;
}

void Pipeline::releaseLeftHold(qint64 accountId, qint64 amount, qint64 keyId, qint64 budgetHeld)
{
    if (m_closing)
        return;
    auto release = [this, accountId, amount, keyId, budgetHeld] {
        if (amount > 0)
            m_credits.release(accountId, amount);
        if (budgetHeld > 0)
            m_budgets.release(keyId, budgetHeld);
    };
    if (QThread::currentThread() == thread())
        release();
    else
        QMetaObject::invokeMethod(this, release, Qt::QueuedConnection);
}

void Pipeline::observe(const ContextPtr &ctx, int status)
{
    m_metrics.observe(familyLabel(ctx), status, ctx->m_timer.nsecsElapsed() / 1e9);
    emit requestServed(familyLabel(ctx), status, int(ctx->elapsedMs()));
}

void Pipeline::write(const ContextPtr &ctx, int status, HttpHeaders headers, const QByteArray &body)
{
    ctx->exchange()->respond(status, headers, body);
    observe(ctx, status);
}

void Pipeline::startStream(const ContextPtr &ctx, int status, HttpHeaders headers)
{
    // SSE unless the family streams something else (raw media) and says so.
    bool typed = false;
    for (const auto &h : headers)
        typed = typed || h.first.compare("Content-Type", Qt::CaseInsensitive) == 0;
    if (!typed)
        headers.prepend({"Content-Type", "text/event-stream; charset=utf-8"});
    headers.append(qMakePair(QByteArray("Cache-Control"), QByteArray("no-cache")));
    appendIdHeaders(ctx, &headers);
    ctx->m_streamStatus = status;
    ctx->exchange()->startStream(status, headers);
}

void Pipeline::finishStream(const ContextPtr &ctx, const QByteArray &tail,
                            const QByteArray &failedTail)
{
    const int status = ctx->m_streamStatus;
    stampUsage(ctx, status);
    UsageRecord &u = ctx->usage();
    const bool metered = ctx->identity().kind == AuthMode::ApiKey;
    u.latencyMs = int(ctx->elapsedMs());
    auto end = [this, ctx, status](const QByteArray &bytes) {
        if (!bytes.isEmpty())
            ctx->exchange()->writeChunk(bytes);
        ctx->exchange()->endStream();
        observe(ctx, status);
    };
    if (metered && u.cost > 0) {
        // The stream's last event leaves only once its charge and usage record are committed.
        m_db.settle(
            this, u,
            [this, ctx, tail, failedTail, end](const DbResult<ChargeResult> &r) {
                releaseHold(ctx);
                if (!r.ok()) {
                    qWarning("settlement of stream %s failed: %s", qPrintable(ctx->requestId()),
                             qPrintable(r.error));
                    if (failedTail.isEmpty()) {
                        // No error event to end with (a binary stream): the client must not take
                        // an unbilled answer for a whole one.
                        ctx->exchange()->abortConnection();
                        return;
                    }
                    end(failedTail);
                    return;
                }
                noteCharge(r.value);
                noteSpent(ctx);
                end(tail);
            },
            std::move(ctx->m_settlement));
        return;
    }
    releaseHold(ctx);
    end(tail);
    if (metered)
        m_db.recordUsage(u, std::move(ctx->m_settlement));
}
