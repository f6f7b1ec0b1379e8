#include "DatabaseService.h"

#include "Migrations.h"

#include <QDateTime>

DatabaseService::DatabaseService(DatabaseConfig config, int readers, QObject *parent)
    : QObject(parent), m_config(std::move(config)), m_readerCount(qMax(1, readers))
{
    qRegisterMetaType<LedgerEntry>();
    qRegisterMetaType<UsageRecord>();
    qRegisterMetaType<ApiKeyRecord>();
    qRegisterMetaType<ControlTokenRecord>();
}

DatabaseService::~DatabaseService()
{
    stop();
}

void DatabaseService::start(const QList<Migrations::Component> &families)
{
    {
        QSqlDatabase db = m_config.open(QStringLiteral("migrate"));
        const QString name = db.connectionName();
        Migrations::apply(db, m_config.kind(), families);
        m_defaultAccount = Store(db, m_config.kind()).defaultAccountId();
        db = QSqlDatabase();
        DatabaseConfig::close(name);
    }
    m_writer =
        std::make_unique<DbWorker>(m_config, DbWorker::Mode::Writer, QStringLiteral("writer"),
                                   // PostgreSQL: each savepoint in a batch adds an account row
                                   // version to step over; 64 keeps group commit cheap there.
                                   m_config.isPostgres() ? 64 : 1024);
    m_writer->start();
    for (int i = 0; i < m_readerCount; ++i) {
        m_readers.push_back(std::make_unique<DbWorker>(m_config, DbWorker::Mode::Reader,
                                                       QStringLiteral("reader%1").arg(i)));
        m_readers.back()->start();
    }
}

void DatabaseService::stop()
{
    if (m_writer)
        m_writer->shutdown();
    for (auto &r : m_readers)
        r->shutdown();
}

void DatabaseService::flush()
{
    if (m_writer)
        m_writer->flush();
    for (auto &r : m_readers)
        r->flush();
}

void DatabaseService::applyLedger(QObject *context, qint64 accountId, const QString &kind,
                                  qint64 amount, const QString &reason, const QString &requestId,
                                  qint64 floor, std::function<void(DbResult<ChargeResult>)> done)
{
    write<ChargeResult>(
        context,
        [=](Store &s) { return s.applyLedger(accountId, kind, amount, reason, requestId, floor); },
        [this, done = std::move(done)](const DbResult<ChargeResult> &r) {
            if (r.ok() && r.value.status == ChargeResult::Status::Committed)
                emit ledgerAppended(r.value.entry);
            if (done)
                done(r);
        });
}

void DatabaseService::settle(QObject *context, UsageRecord record,
                             std::function<void(DbResult<ChargeResult>)> done)
{
    struct Settled
    {
        ChargeResult charge;
        UsageRecord usage;
    };
    write<Settled>(
        context,
        [record](Store &s) mutable {
            Settled out;
            if (!record.time.isValid()) // the announced record carries the stored time
                record.time = QDateTime::currentDateTimeUtc();
            if (record.cost > 0) {
                out.charge = s.applyLedger(record.accountId, QStringLiteral("charge"), -record.cost,
                                           record.endpoint, record.requestId,
                                           std::numeric_limits<qint64>::min() / 2);
                if (out.charge.status == ChargeResult::Status::Duplicate) {
                    out.usage = record; // settled before: do not record usage twice
                    return out;
                }
            }
            record.id = s.insertUsage(record);
            out.usage = record;
            return out;
        },
        [this, done = std::move(done)](const DbResult<Settled> &r) {
            if (r.ok()) {
                if (r.value.charge.status == ChargeResult::Status::Committed &&
                    r.value.charge.entry.id)
                    emit ledgerAppended(r.value.charge.entry);
                if (r.value.usage.id)
                    emit usageRecorded(r.value.usage);
            }
            if (done)
                done(DbResult<ChargeResult>{r.value.charge, r.error});
        });
}

void DatabaseService::recordUsage(UsageRecord record)
{
    settle(nullptr, std::move(record), nullptr);
}

void DatabaseService::touchApiKey(qint64 id)
{
    const QDateTime now = QDateTime::currentDateTimeUtc();
    write<bool>(
        nullptr,
        [=](Store &s) {
            s.touchApiKey(id, now);
            return true;
        },
        [](const DbResult<bool> &) {});
}

void DatabaseService::touchControlToken(qint64 id)
{
    const QDateTime now = QDateTime::currentDateTimeUtc();
    write<bool>(
        nullptr,
        [=](Store &s) {
            s.touchControlToken(id, now);
            return true;
        },
        [](const DbResult<bool> &) {});
}
