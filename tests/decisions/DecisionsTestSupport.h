#pragma once

// What the decisions suites over HTTP share (tst_decisions_http, tst_decisions_chat).

#include "DecisionsConfig.h"
#include "ServerFixture.h"
#include "upstream/JsonScan.h"

#include <QJsonDocument>
#include <QTest>

namespace DecisionsTest {

// Adds a "backend" column with rows sqlite and postgres.
inline void backends()
{
    QTest::addColumn<QString>("backend");
    QTest::newRow("sqlite") << QStringLiteral("sqlite");
    QTest::newRow("postgres") << QStringLiteral("postgres");
}

inline HttpReply post(ServerFixture &f, const QByteArray &path, const QJsonObject &body,
                      const QByteArray &key)
{
    return f.client().postJson(path, QJsonDocument(body).toJson(QJsonDocument::Compact), key);
}

inline qint64 balance(ServerFixture &f)
{
    return f.store().balance(f.store().defaultAccountId());
}

// The default account's usage records once there are `count` (or after about 2 s).
inline QList<UsageRecord> waitUsage(ServerFixture &f, int count)
{
    UsageQuery q;
    q.accountId = f.store().defaultAccountId();
    q.limit = 100;
    QList<UsageRecord> r;
    for (int i = 0; i < 100 && r.size() < count; ++i) {
        f.service().flush();
        r = f.store().usage(q).records;
        if (r.size() < count)
            QTest::qWait(20);
    }
    return r;
}

// What an answer's usage.cost says, in units, read from its own text; -1 when it has none.
inline qint64 reportedCost(const QByteArray &answer)
{
    const JsonScan::Span s = JsonScan::find(answer, {"usage", "cost"});
    if (!s.found())
        return -1;
    return DecisionsConfig::costUnits(QByteArrayView(answer).sliced(s.begin, s.end - s.begin))
        .value_or(-1);
}

} // namespace DecisionsTest
