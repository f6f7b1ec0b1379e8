#pragma once

#include "DatabaseConfig.h"
#include "ServerSettings.h"

#include <QCommandLineParser>
#include <QHostAddress>
#include <QString>

// Options shared by every command and by the window: where the data lives and where to listen.
struct AppOptions
{
    QString dataDir;
    QString databaseUrl;
    QString configFile;
    QHostAddress listenAddress = QHostAddress(QHostAddress::LocalHost);
    quint16 listenPort = 8080;

    static void addTo(QCommandLineParser &parser, bool withListen);
    // Throws std::runtime_error with a message for the user.
    static AppOptions from(const QCommandLineParser &parser, bool withListen);
    static QString defaultDataDir();

    // SQLite in the data directory (created if needed) unless a database URL was given.
    DatabaseConfig database() const;
    // The same, with the storage settings of the config file applied.
    DatabaseConfig database(const ServerSettings &settings) const;
    // The config file: --config, else DATA_DIR/config.json (which the window saves providers
    // to). Settings come from it when it exists, else the defaults.
    QString effectiveConfigPath() const;
    ServerSettings settings() const;
};
