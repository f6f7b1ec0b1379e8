#include "UsageMeters.h"

#include <QMap>

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

QList<MeterSpec> catalog(const QList<MeterSpec> &specs)
{
    QMap<QString, MeterSpec> byName;
    for (const MeterSpec &spec : specs) {
        Q_ASSERT_X(isValidName(spec.name), "UsageMeters::catalog", "not a meter name");
        Q_ASSERT(spec.fieldScale > 0);
        byName.insert(spec.name, spec);
    }
    return byName.values();
}

MeterSpec describe(const QList<MeterSpec> &specs, const QString &name)
{
    // From the end: a later description of a name replaces an earlier one, as in catalog().
    for (auto spec = specs.crbegin(); spec != specs.crend(); ++spec)
        if (spec->name == name)
            return *spec;
    return MeterSpec(name);
}

} // namespace UsageMeters
