#include "ProbeFamily.h"

#include "DatabaseService.h"
#include "JobQueue.h"
#include "RequestContext.h"
#include "RequestError.h"
#include "Store.h"

#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonObject>
#include <QSqlError>
#include <QSqlQuery>
#include <QTextStream>
#include <QThread>

namespace {

QSqlQuery exec(Store &store, const QString &sql, const QString &label = {})
{
    QSqlQuery q(store.database());
    q.prepare(sql);
    if (!label.isNull())
        q.addBindValue(label);
    if (!q.exec())
        throw std::runtime_error(q.lastError().text().toStdString());
    return q;
}

int stamp(const QStringList &args, CommandHost &host)
{
    QStringList rest = args.mid(1);
    rest[0] = QStringLiteral("probe stamp");
    QCommandLineParser parser;
    parser.addPositionalArgument(QStringLiteral("LABEL"), QStringLiteral("The label to stamp."));
    if (!host.parse(parser, rest, QStringLiteral("Stamp a label into the probe's table.")))
        return 0;
    const QStringList labels = parser.positionalArguments();
    if (labels.size() != 1 || labels.first().isEmpty())
        throw CommandUsageError("expected exactly one label");
    exec(host.store(), QStringLiteral("INSERT INTO probe_stamps (label) VALUES (?)"),
         labels.first());
    host.out() << labels.first() << "\n";
    return 0;
}

int list(const QStringList &args, CommandHost &host)
{
    QStringList rest = args.mid(1);
    rest[0] = QStringLiteral("probe list");
    QCommandLineParser parser;
    if (!host.parse(parser, rest, QStringLiteral("List the stamped labels.")))
        return 0;
    for (const QString &label : ProbeFamily::labels(host.store()))
        host.out() << label << "\n";
    return 0;
}

// The billed stamp (ProbeFamily.h): the fixed price, and the labels stamped as the meter.
void stampRoute(const ContextPtr &ctx)
{
    const auto body = ctx->jsonBody();
    if (!body)
        return;
    const RequestError bad{400,
                           QStringLiteral("labels must be an array of 1 to %1 non-empty strings")
                               .arg(ProbeFamily::kMaxLabels),
                           QStringLiteral("labels")};
    const QJsonArray labels = body->value(QStringLiteral("labels")).toArray();
    if (labels.isEmpty() || labels.size() > ProbeFamily::kMaxLabels)
        return ctx->respondError(bad);
    for (const QJsonValue &label : labels)
        if (label.toString().isEmpty())
            return ctx->respondError(bad);
    ctx->usage().cost = ProbeFamily::kStampPrice;
    ctx->usage().setMeter(ProbeFamily::kStampsMeter, labels.size());
    ctx->respondJson(200, QJsonObject{{"object", "probe.stamp"},
                                      {"labels", labels},
                                      {"stamps", qint64(labels.size())}});
}

} // namespace

QList<Migrations::Component> ProbeFamily::migrations() const
{
    return {{QStringLiteral("probe"),
             {{QStringLiteral("CREATE TABLE probe_stamps (label TEXT NOT NULL)")}}}};
}

QStringList ProbeFamily::labels(Store &store)
{
    QSqlQuery q = exec(store, QStringLiteral("SELECT label FROM probe_stamps ORDER BY label"));
    QStringList labels;
    while (q.next())
        labels.append(q.value(0).toString());
    return labels;
}

QList<MeterSpec> ProbeFamily::meters() const
{
    return {{kStampsMeter, QStringLiteral("Stamps"), QStringLiteral("probe_stamp_count")}};
}

QList<RouteSpec> ProbeFamily::routes(const ServerScope &scope)
{
    RouteSpec r;
    r.method = "GET";
    r.pattern = QStringLiteral("/v1/probe/stamps");
    r.auth = AuthMode::Public;
    r.handler = [&db = scope.database(), parent = scope.parent()](const ContextPtr &ctx) {
        db.read<QStringList>(
            parent, [](Store &s) { return labels(s); },
            [ctx](const DbResult<QStringList> &result) {
                if (!result.ok())
                    return ctx->respondError(503, result.error);
                ctx->respondJson(200,
                                 QJsonObject{{"object", "probe.stamps"},
                                             {"labels", QJsonArray::fromStringList(result.value)}});
            });
    };
    RouteSpec billed;
    billed.method = "POST";
    billed.pattern = QStringLiteral("/v1/probe/stamp");
    billed.auth = AuthMode::ApiKey;
    billed.reservation = kStampPrice;
    billed.handler = stampRoute;
    RouteSpec work;
    work.method = "POST";
    work.pattern = QStringLiteral("/v1/probe/work");
    work.auth = AuthMode::ApiKey;
    work.reservation = kStampPrice;
    workQueue = &scope.executor(QStringLiteral("probe"), 1, kWorkCapacity);
    work.handler = [queue = workQueue.load()](const ContextPtr &ctx) {
        ctx->offload(
            *queue,
            [ctx]() -> JobQueue::Continuation {
                while (holdWork.load())
                    QThread::msleep(2);
                ++workRuns;
                return [ctx] {
                    ctx->usage().cost = kStampPrice;
                    ctx->respondJson(200, QJsonObject{{"object", "probe.work"}});
                };
            },
            QStringLiteral("The probe's workers"));
    };
    return {r, billed, work};
}

QList<FamilyCommand> ProbeFamily::commands()
{
    return {{QStringLiteral("probe"), QStringLiteral("stamp|list"),
             QStringLiteral("stamp labels for the probe family"),
             [](const QStringList &args, CommandHost &host) {
                 if (args.value(1) == u"stamp")
                     return stamp(args, host);
                 if (args.value(1) == u"list")
                     return list(args, host);
                 throw CommandUsageError("usage: switchyard-server probe stamp LABEL | list");
             }}};
}
