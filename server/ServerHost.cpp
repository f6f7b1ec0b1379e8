#include "ServerHost.h"

#include "DatabaseService.h"
#include "EpollDispatcher.h"
#include "Pipeline.h"
#include "Server.h"

#include <QEventLoop>
#include <QSemaphore>

ServerHost::ServerHost(DatabaseService &db, ServerSettings settings,
                       QList<ServiceFamily *> families, QObject *parent)
    : QObject(parent), m_db(db), m_settings(std::move(settings)), m_families(std::move(families))
{
    m_thread.setObjectName(QStringLiteral("server"));
}

ServerHost::~ServerHost()
{
    stop();
}

bool ServerHost::start(const QHostAddress &address, quint16 port, QString *error)
{
    // The thread's dispatcher goes when the thread ends: a new one for every start.
    m_thread.setEventDispatcher(new EpollDispatcher);
    m_thread.start();
    // An object living on the server thread to run code there; the server is built and bound
    // on that thread so every object it owns belongs to it.
    m_anchor = new QObject;
    m_anchor->moveToThread(&m_thread);
    bool ok = false;
    QString err;
    QMetaObject::invokeMethod(
        m_anchor,
        [&] {
            try {
                m_server = new Server(m_db, m_settings, m_families, m_anchor);
                for (const auto &install : m_installers)
                    install(m_server->pipeline());
                connect(m_server, &Server::requestServed, this, &ServerHost::requestServed,
                        Qt::DirectConnection);
                connect(m_server, &Server::alertFired, this, &ServerHost::alertFired,
                        Qt::DirectConnection);
                ok = m_server->listen(address, port, &err);
            } catch (const std::exception &e) {
                err = QString::fromUtf8(e.what());
            }
        },
        Qt::BlockingQueuedConnection);
    if (!ok) {
        if (error)
            *error = err;
        stop();
        return false;
    }
    const bool wildcard = address == QHostAddress::Any || address == QHostAddress::AnyIPv4 ||
                          address == QHostAddress::AnyIPv6;
    QUrl url;
    url.setScheme(QStringLiteral("http"));
    url.setHost(wildcard ? QStringLiteral("127.0.0.1") : address.toString());
    url.setPort(m_server->port());
    m_url = url;
    return true;
}

void ServerHost::stop()
{
    if (!m_thread.isRunning())
        return;
    if (m_server) {
        // 1. Stop accepting and let in-flight responses finish (bounded by the drain timeout).
        QSemaphore drained;
        QMetaObject::invokeMethod(
            m_anchor,
            [this, &drained] {
                connect(
                    m_server, &Server::drained, m_anchor, [&drained] { drained.release(); },
                    Qt::SingleShotConnection);
                m_server->shutdown();
            },
            Qt::QueuedConnection);
        drained.tryAcquire(1, m_settings.drainTimeoutMs + 2000);
        // 2. Drop what is still open (abandoned streams are billed on what they produced), then
        // let the database work the server started complete before its objects go away.
        QMetaObject::invokeMethod(
            m_anchor, [this] { m_server->abortRemaining(); }, Qt::BlockingQueuedConnection);
        m_db.flush();
    }
    // 3. Delete the server on its own thread, then end the thread.
    QMetaObject::invokeMethod(
        m_anchor,
        [this] {
            delete m_anchor;
            m_anchor = nullptr;
            m_server = nullptr;
            m_thread.quit();
        },
        Qt::QueuedConnection);
    m_thread.wait();
}
