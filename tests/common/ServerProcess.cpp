#include "ServerProcess.h"

#include <QElapsedTimer>
#include <QJsonDocument>

ServerProcess::ServerProcess(const QString &program, const QJsonObject &config,
                             const QStringList &where)
    : m_program(program), m_where(where)
{
    if (m_config.open()) {
        m_config.write(QJsonDocument(config).toJson());
        m_config.flush();
    }
}

ServerProcess::~ServerProcess()
{
    terminate();
}

bool ServerProcess::start()
{
    m_process.start(
        m_program,
        QStringList{"serve", "--listen", "127.0.0.1:0", "--config", m_config.fileName()} + m_where);
    if (!m_process.waitForStarted(10'000)) {
        m_log = "could not start " + m_program.toUtf8();
        return false;
    }
    QElapsedTimer t;
    t.start();
    while (!m_log.contains("listening on") && t.elapsed() < 15'000 &&
           m_process.state() == QProcess::Running) {
        m_process.waitForReadyRead(100);
        m_log += m_process.readAllStandardError();
    }
    const qsizetype at = m_log.indexOf("http://127.0.0.1:");
    if (at < 0)
        return false;
    m_port = quint16(m_log.mid(at + 17, m_log.indexOf(' ', at) - at - 17).toUInt());
    return m_port != 0;
}

void ServerProcess::kill()
{
    if (m_process.state() == QProcess::NotRunning)
        return;
    m_process.kill();
    m_process.waitForFinished(10'000);
}

void ServerProcess::terminate()
{
    if (m_process.state() == QProcess::NotRunning)
        return;
    m_process.terminate();
    if (!m_process.waitForFinished(10'000))
        kill();
}

QByteArray ServerProcess::log()
{
    m_log += m_process.readAllStandardError();
    return m_log;
}
