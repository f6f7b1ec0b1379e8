#include "ImagesFamily.h"

#include "DatabaseService.h"
#include "ImageRunner.h"
#include "images/ImageStore.h"
#include "images/ImageTables.h"
#include "ImagesRoutes.h"
#include "WebhookDispatcher.h"

#include <QCoreApplication>
#include <QRandomGenerator>
#include <QSysInfo>

ImagesFamily::ImagesFamily()
    : m_config(ImagesConfig::defaults()), m_events(std::make_unique<ImagesEvents>())
{
}

ImagesFamily::~ImagesFamily()
{
    stop();
}

void ImagesFamily::configure(const QJsonObject &section, const ServerSettings &)
{
    m_config = ImagesConfig::fromJson(section);
}

QList<Migrations::Component> ImagesFamily::migrations() const
{
    return {ImageTables::migrations()};
}

QStringList ImagesFamily::scopes() const
{
    return {QStringLiteral("webhooks:read"), QStringLiteral("webhooks:write")};
}

QList<MeterSpec> ImagesFamily::meters() const
{
    return {{ImageStore::kImagesMeter, QStringLiteral("Images")}};
}

void ImagesFamily::start(DatabaseService &db)
{
    m_db = &db;
    m_instance =
        QStringLiteral("%1:%2:%3")
            .arg(QSysInfo::machineHostName())
            .arg(QCoreApplication::applicationPid())
            .arg(QRandomGenerator::system()->generate() % 0x10000, 4, 16, QLatin1Char('0'));
    // The link key: the first instance's, shared through the database by every other.
    quint32 words[8];
    QRandomGenerator::system()->generate(std::begin(words), std::end(words));
    const QString fresh = QString::fromLatin1(
        QByteArray(reinterpret_cast<const char *>(words), sizeof words).toHex());
    QString secret;
    QString error;
    db.write<QString>(
        nullptr,
        [fresh](Store &s) {
            return ImageStore::ensureSetting(s, QStringLiteral("link_secret"), fresh);
        },
        [&](const DbResult<QString> &r) {
            secret = r.value;
            error = r.error;
        });
    db.flush();
    if (!error.isEmpty())
        throw std::runtime_error("images: cannot read the link secret: " + error.toStdString());
    m_linkSecret = QByteArray::fromHex(secret.toLatin1());

    // Made, run and destroyed on the family's thread (their timers and sockets live there).
    m_thread.start([this] {
        m_runner = new ImageRunner(*this);
        m_dispatcher = new WebhookDispatcher(*this);
    });
}

void ImagesFamily::stop()
{
    // Destroyed on their own thread: their timers and connections belong to it.
    m_thread.stop([this] {
        delete m_runner.data();
        delete m_dispatcher.data();
    });
}

void ImagesFamily::enqueue(Store &store, const Message &message) const
{
    ImageStore::insertEvent(store, message.subject, message.accountId, message.url, message.body,
                            message.nowMs);
}

QList<RouteSpec> ImagesFamily::routes(const ServerScope &scope)
{
    scope.provideOutbox(this);
    return imagesRoutes(*this, scope) + webhookControlRoutes(*this, scope);
}

QJsonArray ImagesFamily::models() const
{
    return m_config.modelsJson();
}

void ImagesFamily::run(const ImageStore::Task &task)
{
    if (m_runner)
        QMetaObject::invokeMethod(
            m_runner.data(), [r = m_runner, task] { r->enqueue(task); }, Qt::QueuedConnection);
}

void ImagesFamily::wakeDispatcher()
{
    if (m_dispatcher)
        QMetaObject::invokeMethod(
            m_dispatcher.data(), [d = m_dispatcher] { d->wake(); }, Qt::QueuedConnection);
}

std::unique_ptr<ServiceFamily> makeFamily_images()
{
    return std::make_unique<ImagesFamily>();
}
