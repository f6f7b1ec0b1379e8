#pragma once

#include "FakeUpstreamProcess.h"
#include "images/ImageStore.h"
#include "ServerFixture.h"

#include <memory>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSqlQuery>
#include <QTest>

// Skips (or, with SWITCHYARD_REQUIRE_PG=1, fails) a test that needs the PostgreSQL server when
// there is none.
#define IMAGES_REQUIRE_POSTGRES()                                                                  \
    do {                                                                                           \
        TestDatabase probe(QStringLiteral("postgres"));                                            \
        if (!probe.ready()) {                                                                      \
            if (qEnvironmentVariable("SWITCHYARD_REQUIRE_PG") == QLatin1String("1"))               \
                QFAIL(qPrintable(probe.skipReason()));                                             \
            QSKIP(qPrintable(probe.skipReason()));                                                 \
        }                                                                                          \
    } while (false)

// What the image suites share: the fake upstream as an OpenAI images provider, the section,
// requests, and direct looks into the database.
namespace ImagesTest {

inline const QByteArray kUpstreamKey = "sk-images-upstream-SECRET-0123456789";
inline constexpr qint64 kPrice = 10000000; // 0.01 credits per image
inline constexpr qint64 kCredit = 1000000000;

inline void backends()
{
    QTest::addColumn<QString>("backend");
    QTest::newRow("sqlite") << QStringLiteral("sqlite");
    QTest::newRow("postgres") << QStringLiteral("postgres");
}

// The "images" section: the fake as provider `fake`, model test-image at 0.01 per image, and
// `extra` merged on top (webhooks, timeouts, ...).
inline QJsonObject section(const FakeUpstreamProcess &fake, const QJsonObject &extra = {},
                           int totalMs = 20000)
{
    QJsonObject s{
        {"providers",
         QJsonObject{{"fake", QJsonObject{{"type", "openai"},
                                          {"base_url", fake.base("/v1")},
                                          {"keys", QJsonArray{QString::fromLatin1(kUpstreamKey)}},
                                          {"timeouts", QJsonObject{{"total_ms", totalMs}}}}}}},
        {"models", QJsonArray{QJsonObject{{"id", "test-image"},
                                          {"provider", "fake"},
                                          {"upstream_model", "fake-image-1"},
                                          {"price_per_image", "0.01"}}}},
        {"default_model", "test-image"},
        {"sweep_ms", 100},
        {"download",
         QJsonObject{{"allow_http", true}, {"allow_cidrs", QJsonArray{"127.0.0.0/8"}}}}};
    for (auto it = extra.begin(); it != extra.end(); ++it)
        s.insert(it.key(), it.value());
    return s;
}

inline ServerSettings settingsWith(const QJsonObject &images)
{
    ServerSettings s = ServerSettings::defaults();
    s.familySections.insert("images", images);
    return s;
}

inline HttpReply post(ServerFixture &f, const QJsonObject &body, const QByteArray &key,
                      const QList<QPair<QByteArray, QByteArray>> &extra = {})
{
    QList<QPair<QByteArray, QByteArray>> headers{{"Authorization", "Bearer " + key},
                                                 {"Content-Type", "application/json"}};
    headers += extra;
    return f.client().request("POST", "/v1/images/generations", headers,
                              QJsonDocument(body).toJson(QJsonDocument::Compact));
}

inline qint64 balance(ServerFixture &f)
{
    return f.store().balance(f.store().defaultAccountId());
}

inline qint64 count(ServerFixture &f, const QString &sql)
{
    QSqlQuery q(f.store().database());
    if (!q.exec(sql) || !q.next())
        return -1;
    return q.value(0).toLongLong();
}

// A second instance on the fixture's database, with its own families, dispatcher and server,
// listening on a free port; null, and *error set, when it could not listen.
inline std::unique_ptr<Services> secondInstance(ServerFixture &a, const ServerSettings &settings,
                                                QString *error)
{
    auto b = std::make_unique<Services>(settings, a.service().config());
    b->start();
    if (!b->listen(QHostAddress::LocalHost, 0, error))
        return nullptr;
    return b;
}

inline std::optional<ImageStore::Task> task(ServerFixture &f, const QString &id)
{
    return ImageStore::task(f.store(), id);
}

// The path and query of a link (its host is whatever the request's Host was).
inline QByteArray target(const QString &url)
{
    const QUrl u(url);
    return (u.path() + QLatin1Char('?') + u.query(QUrl::FullyEncoded)).toLatin1();
}

// A PNG's width and height from its IHDR, or {0, 0}.
inline QPair<int, int> pngSize(const QByteArray &png)
{
    if (!png.startsWith("\x89PNG\r\n\x1a\n") || png.size() < 24 || png.mid(12, 4) != "IHDR")
        return {0, 0};
    const auto be = [&](int at) {
        return (uchar(png[at]) << 24) | (uchar(png[at + 1]) << 16) | (uchar(png[at + 2]) << 8) |
               uchar(png[at + 3]);
    };
    return {int(be(16)), int(be(20))};
}

} // namespace ImagesTest
