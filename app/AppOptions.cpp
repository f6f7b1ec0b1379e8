#include "AppOptions.h"

#include "FileModes.h"

#include <cstdio>
#include <QDir>
#include <QFile>
#include <QStandardPaths>
#include <stdexcept>

void AppOptions::addTo(QCommandLineParser &parser, bool withListen)
{
    parser.addOption(
        {QStringLiteral("data-dir"),
         QStringLiteral("Directory for the SQLite database (default: %1).").arg(defaultDataDir()),
         QStringLiteral("DIR")});
    parser.addOption(
        {QStringLiteral("database"),
         QStringLiteral("Use PostgreSQL instead of SQLite: postgresql://user:pass@host:port/db."),
         QStringLiteral("URL")});
    if (withListen) {
        parser.addOption({QStringLiteral("listen"),
                          QStringLiteral("Address and port to serve on (default 127.0.0.1:8080; "
                                         "port 0 picks a free one)."),
                          QStringLiteral("HOST:PORT")});
        parser.addOption({QStringLiteral("config"),
                          QStringLiteral("JSON configuration file (limits, rate-limit tiers)."),
                          QStringLiteral("FILE")});
    }
}

QString AppOptions::defaultDataDir()
{
    if (const QByteArray env = qgetenv("SWITCHYARD_DATA_DIR"); !env.isEmpty())
        return QString::fromLocal8Bit(env);
    const QString base = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
    return QDir(base).filePath(QStringLiteral("switchyard"));
}

AppOptions AppOptions::from(const QCommandLineParser &parser, bool withListen)
{
    AppOptions o;
    o.dataDir = parser.isSet(QStringLiteral("data-dir")) ? parser.value(QStringLiteral("data-dir"))
                                                         : defaultDataDir();
    o.databaseUrl = parser.value(QStringLiteral("database"));
    if (o.databaseUrl.isEmpty())
        o.databaseUrl = QString::fromLocal8Bit(qgetenv("SWITCHYARD_DATABASE"));
    if (withListen) {
        o.configFile = parser.value(QStringLiteral("config"));
        if (parser.isSet(QStringLiteral("listen"))) {
            const QString listen = parser.value(QStringLiteral("listen"));
            const qsizetype colon = listen.lastIndexOf(u':');
            bool ok = false;
            const uint port = colon > 0 ? listen.mid(colon + 1).toUInt(&ok) : 0;
            QString host = colon > 0 ? listen.left(colon) : QString();
            if (host.startsWith(u'[') && host.endsWith(u']'))
                host = host.mid(1, host.size() - 2);
            if (host == u"localhost")
                host = QStringLiteral("127.0.0.1");
            const QHostAddress address(host);
            if (!ok || port > 65535 || address.isNull())
                throw std::runtime_error("--listen must be HOST:PORT with a numeric address, "
                                         "e.g. 127.0.0.1:8080");
            o.listenAddress = address;
            o.listenPort = quint16(port);
        }
    }
    return o;
}

void AppOptions::secureFiles() const
{
    QStringList paths{dataDir};
    if (databaseUrl.isEmpty())
        paths += DatabaseConfig::sqlite(sqlitePath()).sqliteFiles();
    paths.append(effectiveConfigPath());
    for (const QString &path : std::as_const(paths)) {
        const QString line = FileModes::restrictToOwner(path);
        if (!line.isEmpty())
            std::fprintf(stderr, "switchyard: %s\n", qPrintable(line));
    }
}

QString AppOptions::sqlitePath() const
{
    return QDir(dataDir).filePath(QStringLiteral("switchyard.db"));
}

DatabaseConfig AppOptions::database() const
{
    if (!databaseUrl.isEmpty())
        return DatabaseConfig::fromUrl(databaseUrl);
    QString error;
    if (!FileModes::makePrivateDirectory(dataDir, &error))
        throw std::runtime_error(
            QStringLiteral("cannot create the data directory: %1").arg(error).toStdString());
    return DatabaseConfig::sqlite(sqlitePath());
}

QString AppOptions::effectiveConfigPath() const
{
    return configFile.isEmpty() ? QDir(dataDir).filePath(QStringLiteral("config.json"))
                                : configFile;
}

ServerSettings AppOptions::settings() const
{
    const QString path = effectiveConfigPath();
    if (!configFile.isEmpty() || QFile::exists(path))
        return ServerSettings::fromConfigFile(path);
    ServerSettings s = ServerSettings::defaults();
    s.configPath = path;
    return s;
}

DatabaseConfig AppOptions::database(const ServerSettings &settings) const
{
    DatabaseConfig c = database();
    c.setSqliteFullSync(settings.sqliteFullSync);
    return c;
}
