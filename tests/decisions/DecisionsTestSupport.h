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
