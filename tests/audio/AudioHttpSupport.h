#pragma once

#include "AudioTestSupport.h"
#include "Pipeline.h"
#include "RawClient.h"
#include "RequestContext.h"
#include "ServerFixture.h"

#include <atomic>
#include <memory>
#include <QSqlQuery>
#include <QTest>

// What the audio suites over HTTP share: the SQLite-only data row, the balance, a form POST, the
// receive buffer of their raw clients (tests/common/RawClient.h), the usage rows.
namespace AudioTest {

inline const QByteArray kBoundary = "----switchyard-test-7MA4YWxkTrZu0gW";

inline void sqliteRow()
{
    QTest::addColumn<QString>("backend");
    QTest::newRow("sqlite") << QStringLiteral("sqlite");
}

inline qint64 balance(ServerFixture &f)
{
    return f.store().balance(f.store().defaultAccountId());
}

inline HttpReply postForm(ServerFixture &f, const QByteArray &path, const QList<Part> &parts,
                          const QByteArray &key)
{
    return f.client().request("POST", path,
                              {{"Authorization", "Bearer " + key},
                               {"Content-Type", "multipart/form-data; boundary=" + kBoundary}},
                              multipart(parts, kBoundary));
}

// A ServerFixture route hook: GET /test/speech.bin answers `bytes` (a file_uri to fetch), and
// counts its requests in *hits when given.
inline std::function<void(Pipeline &)> serveFile(const QByteArray &bytes,
                                                 std::shared_ptr<std::atomic_int> hits = {})
{
    return [bytes, hits](Pipeline &p) {
        RouteSpec r;
        r.method = "GET";
        r.pattern = QStringLiteral("/test/speech.bin");
        r.auth = AuthMode::Public;
        r.handler = [bytes, hits](const ContextPtr &ctx) {
            if (hits)
                ++*hits;
            ctx->respondRaw(200, "application/octet-stream", bytes);
        };
        p.addRoute(r);
    };
}

// A JSON POST as it goes on the wire.
inline QByteArray rawPost(const QByteArray &path, const QByteArray &key, const QByteArray &json)
{
    return "POST " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key +
           "\r\nContent-Type: application/json\r\nContent-Length: " +
           QByteArray::number(json.size()) + "\r\n\r\n" + json;
}

// The receive buffer of the audio suites' RawClients: small, so the kernel holds little on a
// client's behalf, and a client that stops reading stops taking the answer.
constexpr int kSmallReceiveBuffer = 64 * 1024;

// What a speech answer's count of the audio taken may lag behind what the connection took
// (server/audio/README.md, "Billing"): the 64 KiB the server lets wait unsent and one piece,
// and the kernel's queue for the answer (32 KiB asked, twice that reserved, and one 64 KiB
// segment past it).
constexpr qint64 kTakenSlack = (64 + 16 + 2 * 32 + 64) * 1024;

// One request's usage row, as stored.
struct UsageRow
{
    qint64 cost = -1;
    int status = 0;
    qint64 characters = 0;
    qint64 audioMs = 0;
};

// The usage rows of an endpoint, oldest first.
inline QList<UsageRow> usageRows(ServerFixture &f, const QString &endpoint)
{
    QList<UsageRow> rows;
    QSqlQuery q(f.store().database());
    // A meter a record lacks (no usage_meters row) is 0.
    q.prepare("SELECT r.cost, r.status, COALESCE((SELECT m.quantity FROM usage_meters m WHERE "
              "m.usage_id = r.id AND m.meter = 'characters'), 0), COALESCE((SELECT m.quantity "
              "FROM usage_meters m WHERE m.usage_id = r.id AND m.meter = 'audio_ms'), 0) FROM "
              "usage_records r WHERE r.endpoint = ? ORDER BY r.id");
    q.addBindValue(endpoint);
    if (q.exec())
        while (q.next())
            rows.append({q.value(0).toLongLong(), q.value(1).toInt(), q.value(2).toLongLong(),
                         q.value(3).toLongLong()});
    return rows;
}

} // namespace AudioTest
