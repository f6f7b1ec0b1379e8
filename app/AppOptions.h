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

    // Before anything opens them: takes the group and other permissions away from the data
    // directory, the SQLite database and its -wal and -shm files, and the config file (--config
    // or the one in the data directory), and prints a line on stderr for each change
    // ("switchyard: tightened permissions of DIR/switchyard.db from 0644 to 0600") or for a file
    // left open (another user's). Every command that opens the data directory calls it first.
    void secureFiles() const;
    // SQLite in the data directory (created 0700 if needed) unless a database URL was given.
    DatabaseConfig database() const;
    // The same, with the storage settings of the config file applied.
    DatabaseConfig database(const ServerSettings &settings) const;
    // The config file: --config, else DATA_DIR/config.json (which the window saves providers
    // to). Settings come from it when it exists, else the defaults.
    QString effectiveConfigPath() const;
    ServerSettings settings() const;

private:
    QString sqlitePath() const;
};
