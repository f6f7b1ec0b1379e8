#include "FakeUpstreamProcess.h"

#include <QElapsedTimer>
#include <QRegularExpression>

FakeUpstreamProcess::~FakeUpstreamProcess()
{
    if (m_process.state() == QProcess::NotRunning)
        return;
    m_process.closeWriteChannel(); // it stops when its stdin closes
    if (!m_process.waitForFinished(3000)) {
        m_process.kill();
        m_process.waitForFinished(1000);
    }
}

bool FakeUpstreamProcess::start(const QStringList &args)
{
    m_process.start(QStringLiteral(FAKE_UPSTREAM_PATH),
                    QStringList{QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")} + args);
    if (!m_process.waitForStarted(5000))
        return false;
    QElapsedTimer timer;
    timer.start();
    while (!m_process.canReadLine() && timer.elapsed() < 10'000)
        m_process.waitForReadyRead(100);
    static const QRegularExpression re(
        QStringLiteral("^listening on http://127\\.0\\.0\\.1:(\\d+)\\n$"));
    const auto m = re.match(QString::fromUtf8(m_process.readLine()));
    m_port = m.hasMatch() ? quint16(m.captured(1).toUInt()) : 0;
    return m_port != 0;
}

QString FakeUpstreamProcess::url() const
{
    return QStringLiteral("http://127.0.0.1:%1").arg(m_port);
}
