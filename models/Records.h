#pragma once

#include <QDateTime>
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
    qint64 characters = 0;
    qint64 audioMs = 0;
    qint64 images = 0; // images produced and billed (image tasks)
    qint64 requests = 1;
    qint64 cost = 0; // units
    int status = 0;
    int latencyMs = 0;
    QString requestId;
    bool estimated = false;
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
