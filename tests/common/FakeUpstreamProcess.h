#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>

// The project's fake upstream (tests/fake_upstream) as a child process on 127.0.0.1 and a port
// the system picks. It stops with this object (and on its own when its stdin closes, so a test
// that dies cannot leave it running).
class FakeUpstreamProcess
{
public:
    FakeUpstreamProcess() = default;
    // Starts at once; check isRunning().
    explicit FakeUpstreamProcess(const QStringList &args) { start(args); }
    ~FakeUpstreamProcess();
    FakeUpstreamProcess(const FakeUpstreamProcess &) = delete;
    FakeUpstreamProcess &operator=(const FakeUpstreamProcess &) = delete;

    // Starts it with extra flags and waits for its "listening on" line; false if it did not come.
    bool start(const QStringList &args = {});
    bool isRunning() const { return m_port != 0; }
    quint16 port() const { return m_port; }
    QString url() const; // http://127.0.0.1:PORT
    QString base(const char *path = "/v1") const { return url() + QLatin1String(path); }

private:
    QProcess m_process;
    quint16 m_port = 0;
};

// In a test function, with ServerFixture.h: starts the fake upstream as `fake` (the test fails
// when it does not start), then a server `f` as SY_START_SERVER(f, ...) does, on arguments that
// may use `fake` (its URL in the settings).
#define SY_START_ON_FAKE(fake, f, ...)                                                             \
    FakeUpstreamProcess fake;                                                                      \
    QVERIFY(fake.start());                                                                         \
    SY_START_SERVER(f, __VA_ARGS__)
