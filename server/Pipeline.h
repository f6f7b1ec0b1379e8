#pragma once

#include "Alerts.h"
#include "Authenticator.h"
#include "CreditGate.h"
#include "http/HttpHandler.h"
#include "KeyBudgets.h"
#include "Metrics.h"
#include "RateLimiter.h"
#include "RequestContext.h"
#include "Router.h"
#include "ServerSettings.h"
#include "SharedState.h"
#include "Store.h"

#include <memory>
#include <QElapsedTimer>
#include <QObject>

class DatabaseService;

// The request pipeline, written once: limits, routing, authentication, rate limits, credit
// admission, the family handler, metering and settlement, the response in the family's envelope
// with X-Request-Id. Lives on the server thread.
//
// Everything up to the credit admission is the head step (head()): decided on the head alone,
// before any of the body is read, so that a refusal (404, 405, 413 for a declared length, 401,
// 403, 429, 402) never reads it. The request's context is made at the head and kept by the
// connection, with its credit hold, until the body is complete; then the route's handler runs.
// With a cached credential and a fresh balance the head step decides within the head's own
// read, and the body that arrived with it is handled in the same pass.
class Pipeline : public QObject, public HttpHandler
{
    Q_OBJECT
public:
    Pipeline(DatabaseService &db, const ServerSettings &settings, QObject *parent = nullptr);
    ~Pipeline() override;

    void addRoute(RouteSpec spec) { m_router.add(std::move(spec)); }
    // The envelope of errors under a path prefix that no route claims: the path itself and what
    // lies below it ("/v1/x" covers "/v1/x/y", not "/v1/xy"); the longest prefix wins,
    // otherwise the core's OpenAI-style envelope. A matched route's own errorStyle overrides it.
    void addErrorPrefix(const QString &prefix, ErrorStyle style);
    Metrics &metrics() { return m_metrics; }
    // The state instances on one PostgreSQL database share; nullptr on SQLite or when
    // server.shared_state is "off".
    SharedState *sharedState() { return m_shared.get(); }
    const ServerSettings &settings() const { return m_settings; }
    // Keys' budgets; tests set its clock (KeyBudgets::setClock), which expiry is checked by too.
    KeyBudgets &budgets() { return m_budgets; }
    // The operator's alerts; nullptr when none is configured.
    Alerts *alerts() { return m_alerts; }

    void head(const ExchangePtr &exchange) override;
    void reject(const ExchangePtr &exchange, int status, const QString &message) override;

signals:
    void requestServed(const QString &family, int status, int latencyMs);
    // An alert that fired (Alerts.h), on the server thread.
    void alertFired(const QJsonObject &alert);

private:
    // A request reaches the pipeline through its context; a family, through its ServerScope.
    friend class RequestContext;
    friend class ServerScope;

    ErrorStyle errorStyleForPath(const QString &path) const;
    CreditGate &credits() { return m_credits; }
    // Holds `amount` against the key's budget (when it has one), then its account's credit.
    void reserve(const ContextPtr &ctx, qint64 amount, std::function<void()> then);
    void complete(const ContextPtr &ctx, int status, HttpHeaders headers, const QByteArray &body);
    void startStream(const ContextPtr &ctx, int status, HttpHeaders headers);
    void finishStream(const ContextPtr &ctx, const QByteArray &tail, const QByteArray &failedTail);
    // Hands the credit gate back the context's hold; a billed request's once it has settled.
    void releaseHold(const ContextPtr &ctx);
    // The credit gate's part of it alone (RequestContext::releaseHold).
    void releaseCreditHold(const ContextPtr &ctx);
    // A hold whose context ended without an answer; from any thread (the context's last owner
    // may be a worker), released on the pipeline's.
    void releaseLeftHold(qint64 accountId, qint64 amount, qint64 keyId, qint64 budgetHeld);
    // The key's budget hold of `amount` (step 4, before the credit hold): 402
    // key_budget_exceeded or 503, or then() with the hold kept.
    void holdBudget(const ContextPtr &ctx, qint64 amount, std::function<void()> then);
    void holdCredit(const ContextPtr &ctx, qint64 amount, std::function<void()> then);
    // Steps 3 and 4 on the state instances share: a token from bucketKey (empty: none) and a
    // hold of `amount` on the key's budget (when it has one) and the account's credit, in one
    // call; 429, 402 (key_budget_exceeded or insufficient credits), 503, or then().
    void holdShared(const ContextPtr &ctx, const QByteArray &bucketKey, int limit, qint64 amount,
                    std::function<void()> then);
    // 402 key_budget_exceeded for a hold of `amount`: what was spent and held, when it resets.
    void refuseBudget(const ContextPtr &ctx, qint64 amount, qint64 spent, qint64 held,
                      const QDateTime &end);
    // The key's rules that decide before anything is held: expiry (401 key_expired) and the
    // client's address (403 ip_not_allowed); false when it answered.
    bool keyRulesAllow(const ContextPtr &ctx, const ApiKeyRecord &key);
    // A settled charge counted in the key's budget period.
    void noteSpent(const ContextPtr &ctx);
    // The client's address for the key's allowed_ips: the peer, or what trusted proxies say.
    QHostAddress clientAddress(const HttpRequest &request) const;

    qint64 bodyLimit(const RouteSpec &route) const;
    // A 413's message in the route's words (its tooLarge), when it has them.
    static QString tooLarge(const RouteSpec *route, const QString &message);
    // Admitted at the head: the body is read, then the route's handler runs.
    void readBody(const ContextPtr &ctx);
    void authenticate(const ContextPtr &ctx);
    void authorized(const ContextPtr &ctx, const Authenticator::Record &record);
    // Step 3's outcome: the rate-limit headers, and a 429 (false) when it refused.
    bool rated(const ContextPtr &ctx, const RateLimiter::Decision &d);
    // Step 4's outcome for a hold of `amount`: 503, 402, or then() with the hold kept.
    void held(const ContextPtr &ctx, qint64 amount, CreditGate::Outcome o, qint64 balance,
              qint64 held, const std::function<void()> &then);
    void admit(const ContextPtr &ctx);
    void run(const ContextPtr &ctx);
    void write(const ContextPtr &ctx, int status, HttpHeaders headers, const QByteArray &body);
    // The usage record's who, when and what.
    void stampUsage(const ContextPtr &ctx, int status);
    // Tells the credit gate the balance a settlement left.
    void noteCharge(const ChargeResult &charge);
    static void appendIdHeaders(const ContextPtr &ctx, HttpHeaders *headers);
    void observe(const ContextPtr &ctx, int status);

    DatabaseService &m_db;
    ServerSettings m_settings;
    Router m_router;
    QList<QPair<QString, ErrorStyle>> m_errorPrefixes;
    Authenticator m_auth;
    RateLimiter m_rates;
    QElapsedTimer m_clock; // the rate limiter's time: monotonic, since the Pipeline began
    CreditGate m_credits;
    KeyBudgets m_budgets;
    Alerts *m_alerts = nullptr;
    std::unique_ptr<SharedState> m_shared;
    Metrics m_metrics;
    // Set as destruction begins: the members' waiting callbacks may hold the last reference to
    // a context, whose destructor must not reach the credit gate they are being torn out of.
    bool m_closing = false;
};
