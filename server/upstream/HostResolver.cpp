#include "HostResolver.h"

#include <QHostInfo>

void SystemHostResolver::lookup(const QString &name, QObject *context, Done done)
{
    QHostInfo::lookupHost(name, context, [done = std::move(done)](const QHostInfo &info) {
        if (info.error() != QHostInfo::NoError || info.addresses().isEmpty())
            done({},
                 info.errorString().isEmpty() ? QStringLiteral("no address") : info.errorString());
        else
            done(info.addresses(), {});
    });
}
