#pragma once

#include <functional>
#include <memory>
#include <QString>

class QThread;

// A family's own thread with an event loop, for its long-lived objects whose timers and
// sockets must not share the server thread (the image task runner and its webhook dispatcher,
// the social catalog keeper): they are made, run and destroyed there. Work a request waits
// for goes to a JobQueue (ServerScope::executor) instead, which bounds it and answers busy.
class FamilyThread
{
public:
    explicit FamilyThread(QString name);
    ~FamilyThread(); // ends the thread; stop() first to destroy what lives there
    FamilyThread(const FamilyThread &) = delete;
    FamilyThread &operator=(const FamilyThread &) = delete;

    // Starts the thread and runs `make` on it (its objects then belong to it); returns once it
    // has run. Again after stop(), a new thread.
    void start(const std::function<void()> &make);
    // Runs `destroy` on the thread, then ends it; nothing when it is not running.
    void stop(const std::function<void()> &destroy);
    bool isRunning() const { return bool(m_thread); }

private:
    void runThere(const std::function<void()> &f);

    const QString m_name;
    std::unique_ptr<QThread> m_thread;
};
