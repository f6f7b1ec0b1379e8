#pragma once

#include <memory>
#include <QJsonObject>
#include <QProcess>
#include <QStringList>
#include <QTemporaryFile>

// One `switchyard-server serve` process on 127.0.0.1 and a port of its choosing, for suites that
// need the program itself (several instances on one database, a SIGKILL): started with a config
// file written from a JSON object, its standard error kept for failure messages. Stopped
// (SIGTERM, then SIGKILL after 10 s) when destroyed.
class ServerProcess
{
public:
    // program: the switchyard-server binary; where: --data-dir/--database (TestDatabase).
    ServerProcess(const QString &program, const QJsonObject &config, const QStringList &where);
    ~ServerProcess();
    ServerProcess(const ServerProcess &) = delete;
    ServerProcess &operator=(const ServerProcess &) = delete;

    // Waits until it listens (15 s at most); false with log() saying why.
    bool start();
    quint16 port() const { return m_port; }
    qint64 pid() const { return m_process.processId(); }
    void kill();      // SIGKILL, and waits for the end
    void terminate(); // SIGTERM (a drained stop), and waits for the end
    // Its standard error so far.
    QByteArray log();

private:
    QString m_program;
    QStringList m_where;
    QTemporaryFile m_config;
    QProcess m_process;
    QByteArray m_log;
    quint16 m_port = 0;
};
