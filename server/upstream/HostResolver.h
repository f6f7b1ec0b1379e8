#pragma once

#include <functional>
#include <QHostAddress>
#include <QList>
#include <QString>

class QObject;

// Name resolution for the URL guard, behind an interface so tests can inject answers (a resolver
// that answers differently on the second lookup) without sending a DNS query.
class HostResolver
{
public:
    using Done = std::function<void(const QList<QHostAddress> &addresses, const QString &error)>;
    virtual ~HostResolver() = default;
    // Resolves name (lower-case ASCII, no trailing dot) without blocking the calling thread.
    // done runs later on that thread, never from inside lookup(), and not at all once context
    // is destroyed. An empty list comes with a non-empty error.
    virtual void lookup(const QString &name, QObject *context, Done done) = 0;
};

// The system resolver (getaddrinfo on Qt's lookup thread pool, via QHostInfo).
class SystemHostResolver : public HostResolver
{
public:
    void lookup(const QString &name, QObject *context, Done done) override;
};
