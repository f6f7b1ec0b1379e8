#pragma once

#include "KeyRules.h"

#include <algorithm>
#include <QDateTime>
#include <QList>
#include <QMetaType>
#include <QString>
#include <QStringList>

// Plain value types shared by the store, the server and the item models.

struct ApiKeyRecord
{
    qint64 id = 0;
    qint64 accountId = 0;
    QString name;
    QString prefix;
    QString tier;
    QDateTime created;
    QDateTime lastUsed;
    QDateTime revoked;
    KeyRules rules;
    bool isRevoked() const { return revoked.isValid(); }
};

struct ControlTokenRecord
{
    qint64 id = 0;
    qint64 accountId = 0;
    QString name;
    QString prefix;
    QStringList scopes;
    QDateTime created;
    QDateTime expires; // invalid: never expires
    QDateTime lastUsed;
    QDateTime revoked;
    bool isRevoked() const { return revoked.isValid(); }
    bool isExpired(const QDateTime &now) const { return expires.isValid() && now >= expires; }
};

struct LedgerEntry
{
    qint64 id = 0;
    qint64 accountId = 0;
    QString kind;      // grant, charge, refund
    qint64 amount = 0; // signed units: grants and refunds positive, charges negative
    qint64 balanceAfter = 0;
    QString reason;
    QString requestId;
    QDateTime created;
};

// One quantity of a usage record: a name the family that sets it chooses ("characters",
// "audio_ms", "images"...) and an exact integer. Stored in usage_meters beside the record.
struct UsageMeter
{
    QString name;
    qint64 quantity = 0;
    bool operator==(const UsageMeter &) const = default;
};

struct UsageRecord
{
    qint64 id = 0;
    qint64 accountId = 0;
    qint64 keyId = 0; // 0 when a control token made the request
    qint64 tokenId = 0;
    QDateTime time;
    QString endpoint;
    QString model;
    qint64 inputTokens = 0;
    qint64 outputTokens = 0;
    qint64 cacheReadTokens = 0;
    qint64 cacheWriteTokens = 0;
    qint64 requests = 1;
    qint64 cost = 0; // units
    int status = 0;
    int latencyMs = 0;
    QString requestId;
    bool estimated = false;
    // The quantities a family bills by besides tokens, by name (UsageMeters.h): each name once,
    // in name order, none of them 0 (a meter a record lacks is 0).
    QList<UsageMeter> meters;

    qint64 meter(QStringView name) const
    {
        for (const UsageMeter &m : meters)
            if (m.name == name)
                return m.quantity;
        return 0;
    }
    // Sets a meter's quantity; 0 removes it.
    void setMeter(const QString &name, qint64 quantity)
    {
        auto at =
            std::lower_bound(meters.begin(), meters.end(), name,
                             [](const UsageMeter &m, const QString &n) { return m.name < n; });
        if (at != meters.end() && at->name == name) {
            if (quantity == 0)
                meters.erase(at);
            else
                at->quantity = quantity;
        } else if (quantity != 0) {
            meters.insert(at, UsageMeter{name, quantity});
        }
    }
};

struct CreatedSecret
{
    qint64 id = 0;
    QString secret; // shown once, never stored
};

Q_DECLARE_METATYPE(ApiKeyRecord)
Q_DECLARE_METATYPE(ControlTokenRecord)
Q_DECLARE_METATYPE(LedgerEntry)
Q_DECLARE_METATYPE(UsageRecord)
