#include "Services.h"

#include "DatabaseService.h"
#include "Scopes.h"
#include "ServerHost.h"

#include <stdexcept>

Services::Services(ServerSettings settings, DatabaseConfig database, FamilyList families,
                   QObject *parent)
    : QObject(parent), m_settings(std::move(settings)), m_families(std::move(families))
{
    database.setSqliteFullSync(m_settings.sqliteFullSync);
    m_db = std::make_unique<DatabaseService>(std::move(database));
    QStringList names;
    for (const auto &f : m_families) {
        names.append(f->name());
        f->configure(m_settings.familySections.value(f->name()).toObject(), m_settings);
    }
    const QList<ServiceFamily *> all = this->families(); // the parameter is moved from
    for (ServiceFamily *f : all)
        f->link(all);
    // Kept, not refused: a file written for a build with more families still starts this one.
    for (auto it = m_settings.familySections.begin(); it != m_settings.familySections.end(); ++it)
        if (!names.contains(it.key()))
            qWarning("config: the section '%s' belongs to no service family of this build "
                     "(known: server, rate_limits, %s); it is ignored",
                     qPrintable(it.key()), qPrintable(names.join(QStringLiteral(", "))));
}

Services::~Services()
{
    stop();
}

QList<ServiceFamily *> Services::families() const
{
    QList<ServiceFamily *> list;
    for (const auto &f : m_families)
        list.append(f.get());
    return list;
}

QStringList Services::scopesOf(const FamilyList &families)
{
    QStringList scopes = Scopes::core();
    for (const auto &f : families)
        scopes.append(f->scopes());
    scopes.removeDuplicates();
    return scopes;
}

QList<Migrations::Component> Services::migrationsOf(const FamilyList &families)
{
    QList<Migrations::Component> list;
    for (const auto &f : families)
        list.append(f->migrations());
    return list;
}

void Services::start()
{
    if (m_started)
        return;
    m_db->start(migrationsOf(m_families));
    m_started = true;
    for (const auto &f : m_families)
        f->start(*m_db);
    m_host = std::make_unique<ServerHost>(*m_db, m_settings, families());
}

bool Services::listen(const QHostAddress &address, quint16 port, QString *error)
{
    if (!m_started)
        throw std::logic_error("Services::listen before start");
    m_serving = m_host->start(address, port, error);
    return m_serving;
}

void Services::stop()
{
    if (!m_started)
        return;
    m_started = false;
    if (m_host)
        m_host->stop();
    m_serving = false;
    for (auto it = m_families.rbegin(); it != m_families.rend(); ++it)
        (*it)->stop();
    m_db->stop();
}
