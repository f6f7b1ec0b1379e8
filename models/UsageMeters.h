#pragma once

#include <QList>
#include <QString>
#include <utility>

// How usage meters are shown. A family that bills by a quantity besides tokens sets it on its
// usage records by name (UsageRecord::setMeter) and registers its description
// (ServiceFamily::meters()), both from one constant in the family's code; the core names no
// meter. The usage API and the Usage panel are given the descriptions of their program's
// families and show every meter a record has, by its description when it has one and under its
// own name otherwise.
struct MeterSpec
{
    MeterSpec() = default;
    MeterSpec(QString name, QString label = {}, QString field = {}, qint64 fieldScale = 1)
        : name(std::move(name)), label(std::move(label)), field(std::move(field)),
          fieldScale(fieldScale)
    {
    }

    QString name;          // as stored: lowercase letters, digits and '_', 1 to 64 characters
    QString label;         // the Usage panel's column header; empty: the name
    QString field;         // the usage API's field in "units"; empty: the name
    qint64 fieldScale = 1; // the API shows quantity / fieldScale (1: the exact integer)
};

namespace UsageMeters {

// Whether a name may be a meter's (the rule above).
bool isValidName(QStringView name);
// The descriptions in name order, one per name (a later one of a name replaces an earlier one):
// the usage API shows each of them on every record (0 when the record lacks it), so that a
// record's shape does not depend on its family. A name that is not valid or a scale below 1 is
// a programming error (asserted).
QList<MeterSpec> catalog(const QList<MeterSpec> &specs);
// The description of `name` among `specs`, or one made from the name alone.
MeterSpec describe(const QList<MeterSpec> &specs, const QString &name);

} // namespace UsageMeters
