#include "DatabaseService.h"
#include "JobQueue.h"
#include "Pipeline.h"
#include "ServiceFamily.h"
#include "upstream/UpstreamClient.h"

ServerScope::ServerScope(Pipeline &pipeline, DatabaseService &db, QObject *parent)
    : m_pipeline(pipeline), m_db(db), m_parent(parent)
{
}

ServerScope::~ServerScope() = default;

void ServerScope::noteBalance(qint64 accountId, qint64 balanceAfter, qint64 ledgerId) const
{
    m_pipeline.credits().noteBalance(accountId, balanceAfter, ledgerId);
}

qint64 ServerScope::held(qint64 accountId) const
{
    return m_pipeline.credits().reserved(accountId);
}

KeyBudgets &ServerScope::budgets() const
{
    return m_pipeline.budgets();
}

void ServerScope::provideOutbox(WebhookOutbox *outbox) const
{
    if (Alerts *alerts = m_pipeline.alerts())
        alerts->setOutbox(outbox);
}

JobQueue &ServerScope::executor(const QString &name, int workers, int capacity) const
{
    JobQueue *&queue = m_executors[name];
    if (!queue)
        queue = new JobQueue(workers, name, m_parent, capacity);
    return *queue;
}

UpstreamClient &ServerScope::upstream() const
{
    if (!m_upstream)
        m_upstream = new UpstreamClient(m_parent);
    return *m_upstream;
}

Metrics &ServerScope::metrics() const
{
    return m_pipeline.metrics();
}

QStringList ServerScope::rateTiers() const
{
    return m_pipeline.settings().tiers.keys();
}
