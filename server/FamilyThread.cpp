#include "FamilyThread.h"

#include <QMetaObject>
#include <QObject>
#include <QThread>

FamilyThread::FamilyThread(QString name) : m_name(std::move(name)) {}

FamilyThread::~FamilyThread()
{
    stop({});
}

void FamilyThread::start(const std::function<void()> &make)
{
    if (m_thread)
        return;
    m_thread = std::make_unique<QThread>();
    m_thread->setObjectName(m_name);
    m_thread->start();
    runThere(make);
}

void FamilyThread::stop(const std::function<void()> &destroy)
{
    if (!m_thread)
        return;
    if (destroy)
        runThere(destroy);
    m_thread->quit();
    m_thread->wait();
    m_thread.reset();
}

void FamilyThread::runThere(const std::function<void()> &f)
{
    // An object of the thread's own to invoke on: the call runs in its event loop.
    QObject anchor;
    anchor.moveToThread(m_thread.get());
    QMetaObject::invokeMethod(&anchor, f, Qt::BlockingQueuedConnection);
}
