#pragma once

#include <optional>
#include <QDateTime>
#include <QHostAddress>
#include <QJsonObject>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QTimeZone>

// What an API key may do beyond its tier, set by the admin with the key and changed later
// (POST and PATCH /api/v1/api-keys, `keys create|update`, the key dialog): a spending budget
// per period, the models it may use, the addresses it may be used from and when it expires.
// Every rule is optional; an empty one allows everything. Stored with the key as compact JSON
// (api_keys.rules) in the storage form below, which differs from the API's only in the budget
// (units instead of a decimal) and the expiry (milliseconds).
struct KeyRules
{
    enum class Period
    {
        Day,
        Week, // from Monday
        Month,
        Total // never resets
    };
    struct Budget
    {
        qint64 amount = 0; // credit units, > 0
        Period period = Period::Total;
        bool operator==(const Budget &) const = default;
    };

    std::optional<Budget> budget;
    QStringList models;     // globs with '*' ("vendorB-*", "gateway/openrouter/*"); empty: any
    QStringList allowedIps; // CIDRs ("10.0.0.0/8", "::1/128"; a bare address is /32 or /128)
    QDateTime expires;      // invalid: never

    bool isEmpty() const
    {
        return !budget && models.isEmpty() && allowedIps.isEmpty() && !expires.isValid();
    }
    bool operator==(const KeyRules &) const = default;

    bool isExpired(const QDateTime &now) const { return expires.isValid() && now >= expires; }
    // Whether the model ID matches one of the globs ('*' matches any run of characters,
    // case-sensitive, the whole ID).
    bool allowsModel(const QString &model) const;
    bool allowsAddress(const QHostAddress &address) const
    {
        return allowedIps.isEmpty() || inAny(allowedIps, address);
    }
    // Whether the address is in one of the CIDRs (none: false; an IPv4-mapped IPv6 address
    // counts as its IPv4 address).
    static bool inAny(const QStringList &cidrs, const QHostAddress &address);

    // The current budget period's bounds for `now`: [start, end), in UTC, periods starting at
    // 00:00 in `zone`; an invalid end for Total (and start at the epoch).
    static QPair<QDateTime, QDateTime> periodAt(Period period, const QDateTime &now,
                                                const QTimeZone &zone);
    static QString periodName(Period period);
    static std::optional<Period> periodFrom(const QString &name);

    // Storage form (api_keys.rules): empty for no rules.
    QByteArray toStored() const;
    static KeyRules fromStored(const QByteArray &json); // bad JSON reads as no rules

    // The API's form of each rule, for GET and the answers of POST and PATCH: budget
    // {"amount": "5.000000000", "period": "day"} or null, models and allowed_ips arrays (empty
    // when unset), expires_at RFC 3339 or null.
    QJsonObject toApi() const;

    // Applies the rules present in an API body (POST or PATCH) over `base`: a field absent
    // keeps base's, null removes the rule, anything else must be valid or *field and *error
    // say which and why (the answer's 400). Fields: budget, models, allowed_ips, expires_at
    // (RFC 3339 or Unix seconds).
    static std::optional<KeyRules> fromApi(const QJsonObject &body, KeyRules base, QString *field,
                                           QString *error);

    // The command line's forms: "5/day" (amount in credits and a period), "vendorB-*,x"
    // (comma-separated globs), "10.0.0.0/8" (one CIDR), "30d" (days from now) or a date or
    // RFC 3339 time. nullopt and *error on bad input.
    static std::optional<Budget> budgetFromText(const QString &text, QString *error);
    static std::optional<QDateTime> expiryFromText(const QString &text, const QDateTime &now,
                                                   QString *error);

    // Checks one entry of each list (for the parsers above and the window's dialog).
    static bool validGlob(const QString &glob);
    static bool validCidr(const QString &cidr);
};
