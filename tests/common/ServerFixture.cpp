#include "ServerFixture.h"

#include "Pipeline.h"

ServerFixture::ServerFixture(const QString &backend, ServerSettings settings,
                             std::function<void(Pipeline &)> routes, FamilyList extra)
    : m_db(backend)
{
    if (!m_db.ready())
        return;
    FamilyList families = createFamilies();
    for (auto &f : extra)
        families.push_back(std::move(f));
    m_services =
        std::make_unique<Services>(std::move(settings), m_db.config(), std::move(families));
    m_services->start();
    if (routes)
        m_services->host()->addRoutes(routes);
    QString error;
    if (!m_services->listen(QHostAddress(QHostAddress::LocalHost), 0, &error))
        qFatal("server did not start: %s", qPrintable(error));
    m_ready = true;
}

void ServerFixture::restart(ServerSettings settings)
{
    m_services->stop();
    m_services.reset();
    m_services = std::make_unique<Services>(std::move(settings), m_db.config());
    m_services->start();
    QString error;
    if (!m_services->listen(QHostAddress(QHostAddress::LocalHost), 0, &error))
        qFatal("server did not restart: %s", qPrintable(error));
}

ServerFixture::~ServerFixture()
{
    if (m_services)
        m_services->stop();
}

Store &ServerFixture::store()
{
    if (!m_store)
        m_store.emplace(m_db.config().open(QStringLiteral("fixture")), m_db.config().kind());
    return *m_store;
}

QByteArray ServerFixture::createKey(const QString &name, qint64 *id)
{
    const CreatedSecret c = store().createApiKey(store().defaultAccountId(), name, "default");
    if (id)
        *id = c.id;
    return c.secret.toLatin1();
}

QByteArray ServerFixture::createToken(const QStringList &scopes, const QDateTime &expires,
                                      qint64 *id)
{
    const CreatedSecret c =
        store().createControlToken(store().defaultAccountId(), "test", scopes, expires);
    if (id)
        *id = c.id;
    return c.secret.toLatin1();
}

void ServerFixture::grant(qint64 units)
{
    store().transaction(
        [&] { store().applyLedger(store().defaultAccountId(), "grant", units, "test", "", 0); });
}
