#include "ControlFamily.h"

#include "ControlApi.h"
#include "CsvExport.h"
#include "DatabaseService.h"
#include "KeyBudgets.h"
#include "Money.h"
#include "Scopes.h"

#include <algorithm>
#include <QJsonArray>
#include <QJsonObject>
#include <QTimer>

namespace {

using namespace ControlApi;

// A key with its rules (KeyRules::toApi) and, for a budget, `spent` in the current period
// (settled charges; `held` is what its requests in progress hold on this instance) and
// `resets_at` (null for a total budget). Status: revoked, expired or active.
QJsonObject keyJson(const ApiKeyRecord &k, const KeyBudgets &budgets, qint64 spent = 0)
{
    const QDateTime now = budgets.now();
    QJsonObject o{{"id", QString::number(k.id)},
                  {"object", "api_key"},
                  {"name", k.name},
                  {"prefix", k.prefix},
                  {"tier", k.tier},
                  {"created_at", timeJson(k.created)},
                  {"last_used_at", timeJson(k.lastUsed)},
                  {"revoked_at", timeJson(k.revoked)},
                  {"status", k.isRevoked()            ? "revoked"
                             : k.rules.isExpired(now) ? "expired"
                                                      : "active"}};
    const QJsonObject rules = k.rules.toApi();
    for (auto it = rules.begin(); it != rules.end(); ++it)
        o.insert(it.key(), it.value());
    if (k.rules.budget) {
        const KeyBudgets::State state = budgets.state(k.id, k.rules.budget->period);
        o.insert("spent", Money::formatCredits(spent));
        o.insert("held", Money::formatCredits(state.held));
        o.insert("resets_at", timeJson(state.end));
    } else {
        o.insert("spent", QJsonValue());
        o.insert("held", QJsonValue());
        o.insert("resets_at", QJsonValue());
    }
    return o;
}

// Settled spending of each key with a budget in its current period (on the store's thread).
QHash<qint64, qint64> spentOf(Store &s, const QList<ApiKeyRecord> &keys, const QDateTime &now,
                              const QTimeZone &zone)
{
    QHash<qint64, qint64> spent;
    for (const ApiKeyRecord &k : keys)
        if (k.rules.budget) {
            const auto [start, end] = KeyRules::periodAt(k.rules.budget->period, now, zone);
            spent.insert(k.id, s.keySpent(k.id, start.toMSecsSinceEpoch(),
                                          end.isValid() ? end.toMSecsSinceEpoch() : 0));
        }
    return spent;
}

// The tier of a POST or PATCH body: absent keeps `fallback`; else it must name a configured
// tier (400 naming the field, false).
bool tierFrom(const ServerScope &host, const ContextPtr &ctx, const QJsonObject &body,
              QString *tier)
{
    const QJsonValue tierValue = body.value("tier");
    if (tierValue.isUndefined())
        return true;
    const QStringList tiers = host.rateTiers();
    if (!tierValue.isString() || !tiers.contains(tierValue.toString())) {
        ctx->respondError(400,
                          QStringLiteral("'tier' must name a configured rate-limit tier (%1).")
                              .arg(tiers.join(u", ")),
                          {}, QStringLiteral("tier"));
        return false;
    }
    *tier = tierValue.toString();
    return true;
}

// The rules of a POST or PATCH body over `base` (400 naming the field, nullopt).
std::optional<KeyRules> rulesFrom(const ContextPtr &ctx, const QJsonObject &body,
                                  const KeyRules &base)
{
    QString field, error;
    auto rules = KeyRules::fromApi(body, base, &field, &error);
    if (!rules)
        ctx->respondError(400, error, {}, field);
    return rules;
}

// A record's quantities: its tokens and requests, then every meter described (the families'
// registrations, UsageMeters.h), 0 when the record lacks it, and any other meter it has under
// its own name.
QJsonObject unitsJson(const UsageRecord &u, const QList<MeterSpec> &described)
{
    QJsonObject units{{"input_tokens", u.inputTokens},
                      {"output_tokens", u.outputTokens},
                      {"cache_read_tokens", u.cacheReadTokens},
                      {"cache_write_tokens", u.cacheWriteTokens},
                      {"requests", u.requests}};
    const auto show = [&units](const MeterSpec &spec, qint64 quantity) {
        const QString field = spec.field.isEmpty() ? spec.name : spec.field;
        if (spec.fieldScale == 1)
            units.insert(field, quantity);
        else
            units.insert(field, double(quantity) / double(spec.fieldScale));
    };
    for (const MeterSpec &spec : described)
        show(spec, u.meter(spec.name));
    for (const UsageMeter &m : u.meters)
        if (std::none_of(described.begin(), described.end(),
                         [&m](const MeterSpec &spec) { return spec.name == m.name; }))
            show(MeterSpec(m.name), m.quantity);
    return units;
}

QJsonObject usageJson(const UsageRecord &u, const QList<MeterSpec> &described)
{
    return {{"id", QString::number(u.id)},
            {"object", "usage_record"},
            {"time", timeJson(u.time)},
            {"api_key_id", u.keyId ? QJsonValue(QString::number(u.keyId)) : QJsonValue()},
            {"endpoint", u.endpoint},
            {"model", u.model},
            {"units", unitsJson(u, described)},
            {"cost", Money::formatCredits(u.cost)},
            {"cost_units", QString::number(u.cost)},
            {"status", u.status},
            {"latency_ms", u.latencyMs},
            {"request_id", u.requestId},
            {"estimated", u.estimated}};
}

void balance(const ServerScope &host, const ContextPtr &ctx)
{
    const qint64 account = ctx->identity().accountId;
    host.database().read<qint64>(
        host.parent(), [account](Store &s) { return s.balance(account); },
        [&host, ctx, account](const DbResult<qint64> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            const qint64 held = host.held(account);
            ctx->respondJson(
                200, QJsonObject{{"object", "credit_balance"},
                                 {"balance", Money::formatCredits(r.value)},
                                 {"balance_units", QString::number(r.value)},
                                 {"reserved", Money::formatCredits(held)},
                                 {"available", Money::formatCredits(r.value - held)},
                                 {"units_per_credit", QString::number(Money::kUnitsPerCredit)}});
        });
}

using CsvPageReader = std::function<CsvExport::Page(Store &, qint64 cursor)>;

// Streams an export page by page (rows read and formatted on a database reader): the next page
// is read only once the client has taken all but kAhead bytes of what was written, so a
// million rows hold no more memory than a page or two whatever the client's speed; a client
// that leaves ends it (one that stops reading is dropped by the idle timeout). A read that
// fails half-way drops the connection, so that a cut file never looks whole.
class CsvStream : public std::enable_shared_from_this<CsvStream>
{
public:
    static constexpr qint64 kAhead = 256 * 1024;

    static void start(const ServerScope &host, const ContextPtr &ctx, const QString &name,
                      const QByteArray &header, CsvPageReader read)
    {
        ctx->startStream(
            200, {{"Content-Type", "text/csv; charset=utf-8"},
                  {"Content-Disposition", "attachment; filename=\"" + name.toLatin1() + ".csv\""}});
        ctx->writeStream(header);
        std::make_shared<CsvStream>(host, ctx, std::move(read))->readFrom(0);
    }
    CsvStream(const ServerScope &host, ContextPtr ctx, CsvPageReader read)
        : m_host(host), m_ctx(std::move(ctx)), m_read(std::move(read))
    {
    }

private:
    void readFrom(qint64 cursor)
    {
        m_host.database().read<CsvExport::Page>(
            m_host.parent(), [read = m_read, cursor](Store &s) { return read(s, cursor); },
            [self = shared_from_this()](const DbResult<CsvExport::Page> &r) { self->write(r); });
    }
    void write(const DbResult<CsvExport::Page> &r)
    {
        if (m_ctx->clientGone())
            return;
        if (!r.ok()) {
            qWarning("CSV export %s failed: %s", qPrintable(m_ctx->requestId()),
                     qPrintable(r.error));
            m_ctx->exchange()->abortConnection();
            return;
        }
        m_ctx->writeStream(r.value.bytes);
        if (!r.value.next)
            return m_ctx->finishStream({});
        waitThenRead(r.value.next);
    }
    void waitThenRead(qint64 cursor)
    {
        if (m_ctx->clientGone())
            return;
        if (m_ctx->exchange()->unsentBytes() <= kAhead)
            return readFrom(cursor);
        QTimer::singleShot(10, m_host.parent(),
                           [self = shared_from_this(), cursor] { self->waitThenRead(cursor); });
    }

    const ServerScope &m_host;
    const ContextPtr m_ctx;
    const CsvPageReader m_read;
};

bool wantsCsv(const ContextPtr &ctx)
{
    const QString format = ctx->request().query.queryItemValue(QStringLiteral("format"));
    if (format.isEmpty() || format == u"json")
        return false;
    if (format != u"csv")
        ctx->respondError(400, QStringLiteral("'format' must be json or csv."), {},
                          QStringLiteral("format"));
    return true;
}

// GET /api/v1/credits/ledger?format=csv: every entry, newest first, within from/to if given.
void ledgerCsv(const ServerScope &host, const ContextPtr &ctx)
{
    QDateTime from, to;
    if (!timeParam(ctx, "from", &from) || !timeParam(ctx, "to", &to))
        return;
    const qint64 account = ctx->identity().accountId;
    CsvStream::start(host, ctx, QStringLiteral("ledger"), CsvExport::ledgerHeader(),
                     [account, from, to](Store &s, qint64 cursor) {
                         return CsvExport::ledgerPage(s, account, cursor, from, to);
                     });
}

void ledger(const ServerScope &host, const ContextPtr &ctx)
{
    if (wantsCsv(ctx))
        return ctx->isAnswered() ? void() : ledgerCsv(host, ctx);
    int limit = 50;
    qint64 before = 0;
    if (!limitParam(ctx, 50, &limit) || !cursorParam(ctx, &before))
        return;
    const qint64 account = ctx->identity().accountId;
    host.database().read<QList<LedgerEntry>>(
        host.parent(), [=](Store &s) { return s.ledger(account, limit + 1, before); },
        [ctx, limit](const DbResult<QList<LedgerEntry>> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            QJsonArray data;
            const bool more = r.value.size() > limit;
            for (qsizetype i = 0; i < qMin<qsizetype>(limit, r.value.size()); ++i) {
                const LedgerEntry &e = r.value[i];
                data.append(QJsonObject{{"id", QString::number(e.id)},
                                        {"object", "ledger_entry"},
                                        {"kind", e.kind},
                                        {"amount", Money::formatCredits(e.amount)},
                                        {"balance_after", Money::formatCredits(e.balanceAfter)},
                                        {"reason", e.reason},
                                        {"request_id", e.requestId},
                                        {"created_at", timeJson(e.created)}});
            }
            QJsonObject body{{"object", "list"}, {"data", data}, {"has_more", more}};
            if (more)
                body.insert("next_cursor", QString::number(r.value[limit - 1].id));
            ctx->respondJson(200, body);
        });
}

// The usage filters every usage route shares: from, to, key, model (400 naming a bad one).
std::optional<UsageQuery> usageFilters(const ContextPtr &ctx)
{
    const QUrlQuery &q = ctx->request().query;
    UsageQuery uq;
    uq.accountId = ctx->identity().accountId;
    if (!timeParam(ctx, "from", &uq.from) || !timeParam(ctx, "to", &uq.to))
        return std::nullopt;
    if (q.hasQueryItem("key")) {
        const auto id = parseId(q.queryItemValue("key"));
        if (!id) {
            ctx->respondError(400, QStringLiteral("'key' must be an API key id."), {},
                              QStringLiteral("key"));
            return std::nullopt;
        }
        uq.keyId = *id;
    }
    uq.model = q.queryItemValue("model", QUrl::FullyDecoded);
    return uq;
}

// GET /api/v1/usage/summary?group_by=key|model|day: requests, cost, tokens and meters per group
// over the filters.
void usageSummary(const ServerScope &host, const ContextPtr &ctx, const QList<MeterSpec> &described)
{
    auto uq = usageFilters(ctx);
    if (!uq)
        return;
    const QString groupBy = ctx->request().query.queryItemValue(QStringLiteral("group_by"));
    if (groupBy != u"key" && groupBy != u"model" && groupBy != u"day")
        return ctx->respondError(400, QStringLiteral("'group_by' must be key, model or day."), {},
                                 QStringLiteral("group_by"));
    host.database().read<QList<UsageSummaryRow>>(
        host.parent(), [uq = *uq, groupBy](Store &s) { return s.usageSummary(uq, groupBy); },
        [ctx, described, groupBy, uq = *uq](const DbResult<QList<UsageSummaryRow>> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            QJsonArray data;
            for (const UsageSummaryRow &row : r.value) {
                UsageRecord sums; // the units' shape of a record, for unitsJson
                sums.inputTokens = row.inputTokens;
                sums.outputTokens = row.outputTokens;
                sums.cacheReadTokens = row.cacheReadTokens;
                sums.cacheWriteTokens = row.cacheWriteTokens;
                sums.requests = row.requests;
                sums.meters = row.meters;
                data.append(QJsonObject{{"group", row.group},
                                        {"requests", row.requests},
                                        {"cost", Money::formatCredits(row.cost)},
                                        {"cost_units", QString::number(row.cost)},
                                        {"units", unitsJson(sums, described)}});
            }
            ctx->respondJson(200, QJsonObject{{"object", "usage_summary"},
                                              {"group_by", groupBy},
                                              {"from", timeJson(uq.from)},
                                              {"to", timeJson(uq.to)},
                                              {"data", data}});
        });
}

void usage(const ServerScope &host, const ContextPtr &ctx, const QList<MeterSpec> &described)
{
    const bool csv = wantsCsv(ctx);
    if (ctx->isAnswered())
        return;
    auto filters = usageFilters(ctx);
    if (!filters)
        return;
    UsageQuery uq = *filters;
    if (csv)
        return CsvStream::start(host, ctx, QStringLiteral("usage"),
                                CsvExport::usageHeader(described),
                                [uq, described](Store &s, qint64 cursor) {
                                    return CsvExport::usagePage(s, uq, cursor, described);
                                });
    if (!limitParam(ctx, uq.limit, &uq.limit) || !cursorParam(ctx, &uq.beforeId))
        return;
    host.database().read<UsagePage>(
        host.parent(), [uq](Store &s) { return s.usage(uq); },
        [ctx, described](const DbResult<UsagePage> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            QJsonArray data;
            for (const UsageRecord &u : r.value.records)
                data.append(usageJson(u, described));
            QJsonObject body{{"object", "list"}, {"data", data}, {"has_more", r.value.hasMore}};
            if (r.value.hasMore)
                body.insert("next_cursor", QString::number(r.value.records.last().id));
            ctx->respondJson(200, body);
        });
}

void listKeys(const ServerScope &host, const ContextPtr &ctx)
{
    const qint64 account = ctx->identity().accountId;
    using Listed = QPair<QList<ApiKeyRecord>, QHash<qint64, qint64>>;
    const KeyBudgets &budgets = host.budgets();
    host.database().read<Listed>(
        host.parent(),
        [account, now = budgets.now(), zone = budgets.zone()](Store &s) {
            const QList<ApiKeyRecord> keys = s.listApiKeys(account);
            return Listed(keys, spentOf(s, keys, now, zone));
        },
        [ctx, &budgets](const DbResult<Listed> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            QJsonArray data;
            for (const ApiKeyRecord &k : r.value.first)
                data.append(keyJson(k, budgets, r.value.second.value(k.id)));
            ctx->respondJson(200, QJsonObject{{"object", "list"}, {"data", data}});
        });
}

void createKey(const ServerScope &host, const ContextPtr &ctx)
{
    const auto body = ctx->jsonBody();
    if (!body)
        return;
    const QJsonValue nameValue = body->value("name");
    if (!nameValue.isString() || nameValue.toString().trimmed().isEmpty() ||
        nameValue.toString().size() > 200)
        return ctx->respondError(400,
                                 QStringLiteral("'name' is required: a string of 1 to 200 "
                                                "characters."),
                                 {}, QStringLiteral("name"));
    QString tier = QStringLiteral("default");
    if (!tierFrom(host, ctx, *body, &tier))
        return;
    const auto rules = rulesFrom(ctx, *body, {});
    if (!rules)
        return;
    const QString name = nameValue.toString().trimmed();
    const qint64 account = ctx->identity().accountId;
    struct Created
    {
        CreatedSecret secret;
        ApiKeyRecord record;
    };
    DatabaseService &db = host.database();
    db.write<Created>(
        host.parent(),
        [=](Store &s) {
            Created c;
            c.secret = s.createApiKey(account, name, tier, *rules);
            c.record = *s.apiKey(account, c.secret.id);
            return c;
        },
        [ctx, &db, &budgets = host.budgets()](const DbResult<Created> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            db.announceApiKeysChanged();
            QJsonObject out = keyJson(r.value.record, budgets);
            out.insert("key", r.value.secret.secret); // the only time the full value is shown
            ctx->respondJson(201, out);
        });
}

void revokeKey(const ServerScope &host, const ContextPtr &ctx)
{
    const auto id = parseId(ctx->param(QStringLiteral("id")));
    if (!id)
        return ctx->respondError(
            404, QStringLiteral("No API key with id '%1'.").arg(ctx->param(QStringLiteral("id"))));
    const qint64 account = ctx->identity().accountId;
    DatabaseService &db = host.database();
    db.write<std::optional<ApiKeyRecord>>(
        host.parent(),
        [=](Store &s) -> std::optional<ApiKeyRecord> {
            auto existing = s.apiKey(account, *id);
            if (!existing)
                return std::nullopt;
            s.revokeApiKey(account, *id);
            return s.apiKey(account, *id);
        },
        [ctx, &db, id, &budgets = host.budgets()](const DbResult<std::optional<ApiKeyRecord>> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            if (!r.value)
                return ctx->respondError(404, QStringLiteral("No API key with id '%1'.").arg(*id));
            db.announceApiKeysChanged();
            ctx->respondJson(200, keyJson(*r.value, budgets));
        });
}

// PATCH /api/v1/api-keys/{id}: name, tier and any rule (null removes one); the key as GET
// shows it.
void updateKey(const ServerScope &host, const ContextPtr &ctx)
{
    const auto id = parseId(ctx->param(QStringLiteral("id")));
    if (!id)
        return ctx->respondError(
            404, QStringLiteral("No API key with id '%1'.").arg(ctx->param(QStringLiteral("id"))));
    const auto body = ctx->jsonBody();
    if (!body)
        return;
    static const QStringList known{"name", "tier", "budget", "models", "allowed_ips", "expires_at"};
    for (const QString &field : body->keys())
        if (!known.contains(field))
            return ctx->respondError(400,
                                     QStringLiteral("'%1' cannot be changed; a key's fields are "
                                                    "%2.")
                                         .arg(field, known.join(u", ")),
                                     {}, field);
    QString name;
    if (body->contains("name")) {
        const QJsonValue v = body->value("name");
        if (!v.isString() || v.toString().trimmed().isEmpty() || v.toString().size() > 200)
            return ctx->respondError(400,
                                     QStringLiteral("'name' must be a string of 1 to 200 "
                                                    "characters."),
                                     {}, QStringLiteral("name"));
        name = v.toString().trimmed();
    }
    QString tier;
    if (!tierFrom(host, ctx, *body, &tier))
        return;
    // The rules are checked here against an empty base (for the 400), then applied in the
    // store's thread over the key's own.
    if (!rulesFrom(ctx, *body, {}))
        return;
    const qint64 account = ctx->identity().accountId;
    DatabaseService &db = host.database();
    const KeyBudgets &budgets = host.budgets();
    using Updated = QPair<std::optional<ApiKeyRecord>, qint64>;
    db.write<Updated>(
        host.parent(),
        [=, body = *body, now = budgets.now(), zone = budgets.zone()](Store &s) -> Updated {
            auto existing = s.apiKey(account, *id);
            if (!existing)
                return {};
            QString field, error;
            const KeyRules rules = *KeyRules::fromApi(body, existing->rules, &field, &error);
            s.updateApiKey(account, *id, name, tier.isEmpty() ? existing->tier : tier, rules);
            auto updated = s.apiKey(account, *id);
            return Updated(updated, spentOf(s, {*updated}, now, zone).value(*id));
        },
        [ctx, &db, &budgets, id](const DbResult<Updated> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            if (!r.value.first)
                return ctx->respondError(404, QStringLiteral("No API key with id '%1'.").arg(*id));
            db.announceApiKeysChanged();
            ctx->respondJson(200, keyJson(*r.value.first, budgets, r.value.second));
        });
}

} // namespace

void ControlFamily::link(const QList<ServiceFamily *> &families)
{
    m_meters = metersOf(families);
}

QList<RouteSpec> ControlFamily::routes(const ServerScope &scope)
{
    QList<RouteSpec> routes;
    auto route = [&](const char *method, const char *pattern, QLatin1StringView needs,
                     std::function<void(const ServerScope &, const ContextPtr &)> fn) {
        RouteSpec r;
        r.method = method;
        r.pattern = QLatin1String(pattern);
        r.auth = AuthMode::ControlToken;
        r.scope = needs;
        r.bucket = QStringLiteral("control");
        r.handler = [&scope, fn = std::move(fn)](const ContextPtr &ctx) { fn(scope, ctx); };
        routes.append(std::move(r));
    };
    route("GET", "/api/v1/credits/balance", Scopes::CreditsRead, balance);
    route("GET", "/api/v1/credits/ledger", Scopes::CreditsRead, ledger);
    // The family outlives every server, and its meters do not change after link().
    route("GET", "/api/v1/usage", Scopes::UsageRead,
          [this](const ServerScope &host, const ContextPtr &ctx) { usage(host, ctx, m_meters); });
    route("GET", "/api/v1/usage/summary", Scopes::UsageRead,
          [this](const ServerScope &host, const ContextPtr &ctx) {
              usageSummary(host, ctx, m_meters);
          });
    route("GET", "/api/v1/api-keys", Scopes::ApiKeysRead, listKeys);
    route("POST", "/api/v1/api-keys", Scopes::ApiKeysWrite, createKey);
    route("PATCH", "/api/v1/api-keys/{id}", Scopes::ApiKeysWrite, updateKey);
    route("DELETE", "/api/v1/api-keys/{id}", Scopes::ApiKeysWrite, revokeKey);
    return routes;
}

std::unique_ptr<ServiceFamily> makeFamily_control()
{
    return std::make_unique<ControlFamily>();
}
