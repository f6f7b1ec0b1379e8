#include "UsageMeters.h"

#include <QMap>
#include <QMutex>

namespace {

struct Registry
{
    QMutex lock;
    QMap<QString, MeterSpec> specs;
};

// Built on first use: families define their meters during static initialization.
Registry &registry()
{
    static Registry r;
    return r;
}

} // namespace

namespace UsageMeters {

bool isValidName(QStringView name)
{
    if (name.isEmpty() || name.size() > 64)
        return false;
    for (QChar c : name)
        if (!((c >= u'a' && c <= u'z') || (c >= u'0' && c <= u'9') || c == u'_'))
            return false;
    return true;
}

QString define(const MeterSpec &spec)
{
    Q_ASSERT_X(isValidName(spec.name), "UsageMeters::define", "not a meter name");
    Q_ASSERT(spec.fieldScale > 0);
    Registry &r = registry();
    QMutexLocker locker(&r.lock);
    r.specs.insert(spec.name, spec);
    return spec.name;
}

QList<MeterSpec> defined()
{
    Registry &r = registry();
    QMutexLocker locker(&r.lock);
    return r.specs.values();
}

MeterSpec describe(const QString &name)
{
    Registry &r = registry();
    QMutexLocker locker(&r.lock);
    return r.specs.value(name, MeterSpec(name));
}

} // namespace UsageMeters
