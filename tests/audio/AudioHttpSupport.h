#pragma once

#include "AudioTestSupport.h"
#include "Pipeline.h"
#include "RequestContext.h"
#include "ServerFixture.h"

#include <QTest>

// What the audio suites over HTTP share: the SQLite-only data row, the balance, a form POST.
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

// A ServerFixture route hook: GET /test/speech.bin answers `bytes` (a file_uri to fetch).
inline std::function<void(Pipeline &)> serveFile(const QByteArray &bytes)
{
    return [bytes](Pipeline &p) {
        RouteSpec r;
        r.method = "GET";
        r.pattern = QStringLiteral("/test/speech.bin");
        r.auth = AuthMode::Public;
        r.handler = [bytes](const ContextPtr &ctx) {
            ctx->respondRaw(200, "application/octet-stream", bytes);
        };
        p.addRoute(r);
    };
}

} // namespace AudioTest
