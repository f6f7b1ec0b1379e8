#include "SocialFakes.h"

#include "FakeUpstream.h"
#include "http/HttpConnection.h"
#include "Json.h"
#include "SocialVideoFakes.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPointer>
#include <QSet>
#include <QTcpSocket>
#include <QTimer>
#include <QTimeZone>
#include <QUrl>
#include <QUrlQuery>

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <utility>

namespace {

constexpr qint64 kMaxBytes = 64 * 1024 * 1024;
constexpr int kMaxPieces = 100'000;
constexpr int kMaxDelayMs = 3'600'000;
constexpr int kDefaultSlowFirstByteMs = 10'000;
constexpr int kResetGraceMinMs = 50; // lets the client read what was sent before the reset
// A streamed body goes out in HTTP chunks of at most kSliceBytes, and only while the socket
// holds fewer than kHighWater unsent bytes (resumed below kLowWater): a 64 MiB answer to a
// slow reader costs about half a MiB, never the whole body.
constexpr qint64 kSliceBytes = 64 * 1024;
constexpr qint64 kHighWater = 512 * 1024;
constexpr qint64 kLowWater = 128 * 1024;
constexpr char kSupport[] = "Discord: https://discord.gg/aMEAS8Xsvz";
constexpr char kDocsBase[] = "https://api.tikhub.io/#/";
const QLatin1StringView kApiPrefix("/api/v1/");
const QLatin1StringView kDocumentPath("/openapi.json");

// ------------------------------------------------------------------------------ request parts

QByteArray rawQueryOf(const QByteArray &target)
{
    const qsizetype mark = target.indexOf('?');
    return mark < 0 ? QByteArray() : target.mid(mark + 1);
}

int hexValue(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

// urllib's unquote_plus: '+' is a space, %XX a byte, a malformed escape left as it is.
QString formDecode(const QByteArray &in)
{
    QByteArray out;
    out.reserve(in.size());
    for (qsizetype i = 0; i < in.size(); ++i) {
        const char c = in[i];
        if (c == '+') {
            out += ' ';
        } else if (c == '%' && i + 2 < in.size() && hexValue(in[i + 1]) >= 0 &&
                   hexValue(in[i + 2]) >= 0) {
            out += char(hexValue(in[i + 1]) * 16 + hexValue(in[i + 2]));
            i += 2;
        } else {
            out += c;
        }
    }
    return QString::fromUtf8(out);
}

// The bearer token of the Authorization header (scheme case-insensitive), or empty.
QByteArray bearerOf(const HttpRequest &request)
{
    const QByteArray authorization = request.header("authorization");
    if (authorization.size() > 7 && authorization.left(7).toLower() == "bearer ")
        return authorization.mid(7).trimmed();
    return {};
}

QByteArray maskKey(const QByteArray &key)
{
    return key.size() <= 8 ? QByteArray("***") : "***" + key.right(4);
}

struct Now
{
    QString text; // as TikHub writes it: 2025-10-08 23:18:23
    qint64 stamp = 0;
    const char *zone = "UTC";
};

Now now()
{
    static const QTimeZone pacific(QByteArrayLiteral("America/Los_Angeles"));
    Now n;
    QDateTime t = QDateTime::currentDateTimeUtc();
    n.stamp = t.toSecsSinceEpoch();
    if (pacific.isValid()) {
        t = t.toTimeZone(pacific);
        n.zone = "America/Los_Angeles";
    }
    n.text = t.toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
    return n;
}

// The query as Starlette's dict(request.query_params) has it: each name once, in the order it
// first appears, with its last value.
Json paramsJson(const QList<QPair<QString, QString>> &query)
{
    QStringList order;
    QHash<QString, QString> last;
    for (const auto &[name, value] : query) {
        if (!last.contains(name))
            order.append(name);
        last.insert(name, value);
    }
    Json params = Json::object();
    for (const QString &name : order)
        params.add(name.toUtf8().constData(), last.value(name));
    return params;
}

bool isCut(Fault::Kind kind)
{
    return kind == Fault::Kind::ResetMidStream || kind == Fault::Kind::StallMidStream ||
           kind == Fault::Kind::MalformedJson;
}

// ------------------------------------------------------------------------------ the sender

// One answer in flight: after a delay, whole (Content-Length) or streamed (chunked) in paced
// pieces, with an optional cut (reset, stall or a clean early end) or never (hang, reset).
// The body is head + `padding` generated letters + tail, produced slice by slice as the
// socket takes it, so its size costs nothing until it is sent.
class SocialJob : public QObject
{
public:
    SocialJob(FakeUpstream &owner, ExchangePtr exchange, HttpConnection *connection)
        : QObject(&owner), m_owner(owner), m_exchange(std::move(exchange)), m_connection(connection)
    {
        m_timer.setSingleShot(true);
        m_timer.setTimerType(Qt::PreciseTimer);
        connect(&m_timer, &QTimer::timeout, this, [this] {
            if (auto next = std::exchange(m_next, nullptr))
                next();
        });
        m_owner.jobStarted(false);
    }

    void setAnswer(int status, HttpHeaders headers, QByteArray head, qint64 padding = 0,
                   QByteArray tail = {})
    {
        m_status = status;
        m_headers = std::move(headers);
        m_head = std::move(head);
        m_padding = padding;
        m_tail = std::move(tail);
    }
    // streamed: chunked, in `pieces` pieces of nearly equal size, intervalMs apart.
    void setPacing(bool streamed, int pieces, int intervalMs)
    {
        m_streamed = streamed;
        m_pieces = pieces;
        m_intervalMs = intervalMs;
    }
    void setFault(const Fault &fault) { m_fault = fault; }

    void start(int delayMs)
    {
        QPointer<SocialJob> self(this);
        m_exchange->onClosed([self] {
            if (self)
                self->end(self->m_resetting ? FakeUpstream::JobEnd::Faulted
                                            : FakeUpstream::JobEnd::Cancelled);
        });
        if (!m_exchange->isOpen()) {
            end(FakeUpstream::JobEnd::Cancelled);
            return;
        }
        if (m_fault.kind == Fault::Kind::Hang)
            return;
        // A reset is never made inside the connection's own dispatch.
        if (delayMs > 0 || m_fault.kind == Fault::Kind::Reset)
            after(qMax(0, delayMs), [this] { begin(); });
        else
            begin();
    }

private:
    qint64 size() const { return m_head.size() + m_padding + m_tail.size(); }
    // Where piece i starts (i = m_pieces: the end of the body).
    qint64 boundary(int i) const { return size() * i / m_pieces; }

    void after(int ms, std::function<void()> next)
    {
        m_next = std::move(next);
        m_timer.start(ms);
    }

    void begin()
    {
        if (m_ended)
            return;
        if (m_fault.kind == Fault::Kind::Reset) {
            m_resetting = true;
            FakeUpstream::resetConnection(m_connection);
            end(FakeUpstream::JobEnd::Faulted);
            return;
        }
        const qint64 total = size();
        m_stop = total;
        if (isCut(m_fault.kind))
            m_stop = m_fault.value >= 0 ? qMin<qint64>(m_fault.value, total) : total / 2;
        if (!m_streamed && (m_stop == total || m_fault.kind == Fault::Kind::MalformedJson) &&
            m_fault.kind != Fault::Kind::ResetMidStream &&
            m_fault.kind != Fault::Kind::StallMidStream) {
            m_exchange->respond(m_status, m_headers, slice(0, m_stop));
            end(FakeUpstream::JobEnd::Completed);
            return;
        }
        m_pieces = int(qMax<qint64>(1, qMin<qint64>(m_pieces, total)));
        if (m_connection) {
            if (auto *socket =
                    m_connection->findChild<QTcpSocket *>(QString(), Qt::FindDirectChildrenOnly)) {
                connect(socket, &QTcpSocket::bytesWritten, this, &SocialJob::onBytesWritten);
                m_watching = true;
            }
        }
        m_exchange->startStream(m_status, m_headers);
        pump();
    }

    void pump()
    {
        while (!m_ended) {
            if (!m_exchange->isOpen()) {
                end(FakeUpstream::JobEnd::Cancelled);
                return;
            }
            if (m_pos >= m_stop) {
                finish();
                return;
            }
            const qint64 pieceEnd = boundary(m_piece + 1);
            if (m_pos >= pieceEnd) {
                ++m_piece;
                if (m_intervalMs > 0) {
                    after(m_intervalMs, [this] { pump(); });
                    return;
                }
                continue;
            }
            if (m_exchange->unsentBytes() > kHighWater) {
                whenDrained(kLowWater, [this] { pump(); });
                return;
            }
            const qint64 n = qMin(qMin(kSliceBytes, pieceEnd - m_pos), m_stop - m_pos);
            m_exchange->writeChunk(slice(m_pos, n));
            m_pos += n;
        }
    }

    void finish()
    {
        switch (m_fault.kind) {
        case Fault::Kind::StallMidStream:
            return; // silence until the client leaves
        case Fault::Kind::ResetMidStream:
            // Qt's buffer first, then a grace so the client reads what the kernel holds.
            m_resetting = true;
            whenDrained(0, [this] {
                after(qMax(m_intervalMs, kResetGraceMinMs), [this] {
                    FakeUpstream::resetConnection(m_connection);
                    // Normally the reset has already ended the job through onClosed.
                    end(FakeUpstream::JobEnd::Faulted);
                });
            });
            return;
        default: // the whole body, or malformed-json's clean early end
            m_exchange->endStream();
            end(FakeUpstream::JobEnd::Completed);
            return;
        }
    }

    // Runs next once the socket holds at most `below` unsent bytes.
    void whenDrained(qint64 below, std::function<void()> next)
    {
        if (m_exchange->unsentBytes() <= below) {
            next();
            return;
        }
        if (!m_watching) { // no socket to watch: poll
            after(5, [this, below, next = std::move(next)]() mutable {
                whenDrained(below, std::move(next));
            });
            return;
        }
        m_drainedBelow = below;
        m_onDrained = std::move(next);
    }

    void onBytesWritten()
    {
        if (m_onDrained && m_exchange->unsentBytes() <= m_drainedBelow) {
            auto next = std::exchange(m_onDrained, nullptr);
            next();
        }
    }

    // Bytes [from, from + n) of the body.
    QByteArray slice(qint64 from, qint64 n) const
    {
        static const QByteArray letters = [] {
            QByteArray b;
            while (b.size() < kSliceBytes + 26)
                b += "abcdefghijklmnopqrstuvwxyz";
            return b;
        }();
        QByteArray out;
        out.reserve(n);
        const qint64 padFrom = m_head.size();
        const qint64 padEnd = padFrom + m_padding;
        while (n > 0) {
            qint64 len = 0;
            if (from < padFrom) {
                len = qMin(n, padFrom - from);
                out.append(m_head.constData() + from, len);
            } else if (from < padEnd) {
                len = qMin(qMin(n, padEnd - from), kSliceBytes);
                out.append(letters.constData() + (from - padFrom) % 26, len);
            } else {
                len = qMin(n, qint64(m_tail.size()) - (from - padEnd));
                if (len <= 0)
                    break;
                out.append(m_tail.constData() + (from - padEnd), len);
            }
            from += len;
            n -= len;
        }
        return out;
    }

    void end(FakeUpstream::JobEnd how)
    {
        if (m_ended)
            return;
        m_ended = true;
        m_timer.stop();
        m_next = nullptr;
        m_onDrained = nullptr;
        m_exchange->onClosed(nullptr);
        m_owner.jobEnded(false, how);
        deleteLater();
    }

    FakeUpstream &m_owner;
    ExchangePtr m_exchange;
    QPointer<HttpConnection> m_connection;
    int m_status = 200;
    HttpHeaders m_headers;
    QByteArray m_head;
    qint64 m_padding = 0;
    QByteArray m_tail;
    bool m_streamed = false;
    int m_pieces = 1;
    int m_intervalMs = 0;
    Fault m_fault;
    qint64 m_stop = 0; // the body ends (or is cut) here
    qint64 m_pos = 0;
    int m_piece = 0;
    bool m_watching = false;
    qint64 m_drainedBelow = 0;
    std::function<void()> m_onDrained;
    std::function<void()> m_next;
    bool m_resetting = false;
    bool m_ended = false;
    QTimer m_timer;
};

// ------------------------------------------------------------------------------ one request

struct Plan
{
    Fault fault;
    int delayMs = 0;
    int intervalMs = 0;
    int pieces = 1;
    qint64 bytes = -1; // -1: the natural size
    int code = 200;
};

class Call
{
public:
    Call(FakeUpstream &owner, const FakeOptions &options, const SocialFakes::Request &request)
        : m_owner(owner), m_options(options), m_request(request),
          m_http(request.exchange->request()), m_rawQuery(rawQueryOf(m_http.target)),
          m_query(SocialFakes::parseQuery(m_rawQuery)), m_key(bearerOf(m_http))
    {
    }

    void answerDocument(const SocialFakes::Catalog &catalog)
    {
        if (m_http.method != "GET") {
            methodNotAllowed("GET");
            return;
        }
        const auto plan = makePlan();
        if (!plan || earlyFault(*plan))
            return;
        auto *job = new SocialJob(m_owner, m_request.exchange, m_request.connection);
        job->setAnswer(200, {{"content-type", "application/json"}}, catalog.document());
        job->setPacing(plan->pieces > 1, plan->pieces, plan->intervalMs);
        job->setFault(plan->fault);
        job->start(plan->delayMs);
    }

    void answerOperation(const QHash<QByteArray, SocialFakes::Operation> &operations)
    {
        const auto it = operations.constFind(m_http.method);
        if (it == operations.cend()) {
            QList<QByteArray> methods = operations.keys();
            std::sort(methods.begin(), methods.end());
            methodNotAllowed(methods.join(", "));
            return;
        }
        const SocialFakes::Operation &op = *it;
        if (op.secured && !authorized())
            return;
        const auto plan = makePlan();
        if (!plan || !valid(op) || earlyFault(*plan))
            return;

        const QByteArray whole = envelope(*plan, op.docs);
        QByteArray head = whole;
        QByteArray tail;
        qint64 padding = 0;
        if (plan->bytes >= 0) {
            // The same envelope with a last member of data, "padding", sized to fit exactly.
            head.chop(2);
            head += ",\"padding\":\"";
            tail = "\"}}";
            const qint64 least = head.size() + tail.size();
            if (plan->bytes < least) {
                detailError(400, QStringLiteral("x-fake-bytes=%1 is below the size of this "
                                                "answer with its padding member (%2 bytes).")
                                     .arg(plan->bytes)
                                     .arg(least));
                return;
            }
            padding = plan->bytes - least;
        }
        auto *job = new SocialJob(m_owner, m_request.exchange, m_request.connection);
        job->setAnswer(200, {{"content-type", "application/json"}}, std::move(head), padding,
                       std::move(tail));
        job->setPacing(plan->pieces > 1 || plan->bytes >= 0, plan->pieces, plan->intervalMs);
        job->setFault(plan->fault);
        job->start(plan->delayMs);
    }

private:
    void respondNow(int status, const QByteArray &body, HttpHeaders extra = {})
    {
        HttpHeaders headers{{"content-type", "application/json"}};
        headers += extra;
        m_request.exchange->respond(status, headers, body);
    }

    // TikHub's error: HTTPException(status, detail=ErrorResponseModel(...)).
    QByteArray detailBody(int status, const QString &message) const
    {
        const Now t = now();
        return Json::object()
            .add("detail", Json::object()
                               .add("code", status)
                               .add("message", message)
                               .add("support", kSupport)
                               .add("time", t.text)
                               .add("router", m_http.path)
                               .add("params", paramsJson(m_query)))
            .toJson();
    }

    void detailError(int status, const QString &message)
    {
        respondNow(status, detailBody(status, message));
    }

    void methodNotAllowed(const QByteArray &allow)
    {
        respondNow(405, R"({"detail":"Method Not Allowed"})", {{"allow", allow}});
    }

    bool authorized()
    {
        if (m_key.isEmpty()) {
            detailError(401, QStringLiteral("Authentication failed: no API token was sent. "
                                            "Send it as 'Authorization: Bearer YOUR_TOKEN'. | "
                                            "认证失败：请求未携带API令牌。"));
            return false;
        }
        if (!m_options.requireKeys.isEmpty() && !m_options.requireKeys.contains(m_key)) {
            detailError(401, QStringLiteral("Authentication failed: the API token %1 is invalid "
                                            "or expired. | 认证失败：API令牌无效或已过期。")
                                 .arg(QString::fromLatin1(maskKey(m_key))));
            return false;
        }
        return true;
    }

    // Flags, then --key-fault, then the query's x-fake-* parameters, then x-fake-* headers.
    std::optional<Plan> makePlan()
    {
        Plan plan;
        plan.delayMs = m_options.firstByteMs;
        plan.intervalMs = m_options.intervalMs;
        QString faultText = m_options.fault;
        if (const auto it = m_options.keyFaults.constFind(m_key); it != m_options.keyFaults.cend())
            faultText = *it;
        QList<QPair<QString, QString>> settings;
        for (const auto &[name, value] : m_query)
            if (name.startsWith(QLatin1String("x-fake-"), Qt::CaseInsensitive))
                settings.append({name.mid(7).toLower(), value});
        for (const auto &h : m_http.headers)
            if (h.first.startsWith("x-fake-"))
                settings.append({QString::fromLatin1(h.first.mid(7)), QString::fromUtf8(h.second)});

        for (const auto &[name, value] : settings) {
            bool ok = false;
            const qint64 n = value.trimmed().toLongLong(&ok);
            auto bad = [&](const QString &expected) {
                detailError(400, QStringLiteral("Invalid fake option x-fake-%1=%2: expected %3.")
                                     .arg(name, value, expected));
                return std::nullopt;
            };
            if (name == QLatin1String("fault")) {
                faultText = value;
            } else if (name == QLatin1String("code")) {
                if (!ok || n < std::numeric_limits<int>::min() ||
                    n > std::numeric_limits<int>::max())
                    return bad(QStringLiteral("an integer"));
                plan.code = int(n);
            } else if (name == QLatin1String("bytes")) {
                if (!ok || n < 1 || n > kMaxBytes)
                    return bad(QStringLiteral("a byte count from 1 to %1").arg(kMaxBytes));
                plan.bytes = n;
            } else if (name == QLatin1String("pieces")) {
                if (!ok || n < 1 || n > kMaxPieces)
                    return bad(QStringLiteral("an integer from 1 to %1").arg(kMaxPieces));
                plan.pieces = int(n);
            } else if (name == QLatin1String("interval-ms")) {
                if (!ok || n < 0 || n > kMaxDelayMs)
                    return bad(QStringLiteral("milliseconds"));
                plan.intervalMs = int(n);
            } else if (name == QLatin1String("delay-ms")) {
                if (!ok || n < 0 || n > kMaxDelayMs)
                    return bad(QStringLiteral("milliseconds"));
                plan.delayMs = int(n);
            } else {
                detailError(400, QStringLiteral("Unknown fake option 'x-fake-%1' (known here: "
                                                "fault, code, bytes, pieces, interval-ms, "
                                                "delay-ms).")
                                     .arg(name));
                return std::nullopt;
            }
        }
        const auto fault = Fault::parse(faultText);
        if (!fault) {
            detailError(400, QStringLiteral("Invalid fault '%1' (known: none, 400-599, "
                                            "429:SECONDS, slow-first-byte[:MS], "
                                            "reset-mid-body[:BYTES], stall-mid-body[:BYTES], "
                                            "malformed-json[:BYTES], hang, reset).")
                                 .arg(faultText));
            return std::nullopt;
        }
        plan.fault = *fault;
        // The body has no in-band error event: the nearest failure is a cut connection.
        if (plan.fault.kind == Fault::Kind::ErrorMidStream)
            plan.fault.kind = Fault::Kind::ResetMidStream;
        if (plan.fault.kind == Fault::Kind::SlowFirstByte)
            plan.delayMs = plan.fault.value < 0 ? kDefaultSlowFirstByteMs : plan.fault.value;
        return plan;
    }

    // FastAPI's validation (pydantic 1 wording), every error at once: required query
    // parameters, then the body.
    bool valid(const SocialFakes::Operation &op)
    {
        Json errors = Json::array();
        int count = 0;
        auto add = [&](Json loc, const char *msg, const char *type) {
            errors.push(
                Json::object().add("loc", std::move(loc)).add("msg", msg).add("type", type));
            ++count;
        };
        QSet<QString> present;
        for (const auto &item : m_query)
            present.insert(item.first);
        for (const QString &name : op.requiredQuery)
            if (!present.contains(name))
                add(Json::array().push("query").push(name), "field required",
                    "value_error.missing");
        const QByteArray &body = m_http.body;
        if (body.isEmpty()) {
            if (op.bodyRequired)
                add(Json::array().push("body"), "field required", "value_error.missing");
        } else if (op.jsonBody) {
            QJsonParseError parseError;
            const QJsonDocument doc = QJsonDocument::fromJson(body, &parseError);
            if (parseError.error != QJsonParseError::NoError) {
                errors.push(Json::object()
                                .add("loc", Json::array().push("body").push(parseError.offset))
                                .add("msg", parseError.errorString())
                                .add("type", "value_error.jsondecode"));
                ++count;
            } else if (doc.isObject()) {
                // Only required members are checked, not types: a body of another shape than
                // the schema's passes, so relay tests can send any JSON.
                const QJsonObject object = doc.object();
                for (const QString &name : op.requiredBody)
                    if (!object.contains(name))
                        add(Json::array().push("body").push(name), "field required",
                            "value_error.missing");
            }
        }
        if (!count)
            return true;
        respondNow(422, Json::object().add("detail", std::move(errors)).toJson());
        return false;
    }

    // Faults answered without the envelope; true when the request was answered.
    bool earlyFault(const Plan &plan)
    {
        switch (plan.fault.kind) {
        case Fault::Kind::Reset:
            if (!m_request.connection) {
                detailError(500, QStringLiteral("fake upstream: cannot find the connection to "
                                                "reset"));
                return true;
            }
            [[fallthrough]];
        case Fault::Kind::Hang: {
            auto *job = new SocialJob(m_owner, m_request.exchange, m_request.connection);
            job->setFault(plan.fault);
            job->start(plan.delayMs);
            return true;
        }
        case Fault::Kind::Status: {
            const int status = plan.fault.value;
            HttpHeaders headers{{"content-type", "application/json"}};
            if (status == 429)
                headers.append({"retry-after", QByteArray::number(plan.fault.retryAfter)});
            auto *job = new SocialJob(m_owner, m_request.exchange, m_request.connection);
            job->setAnswer(status, headers, detailBody(status, statusMessage(status)));
            job->start(plan.delayMs);
            return true;
        }
        default:
            return false;
        }
    }

    static QString statusMessage(int status)
    {
        switch (status) {
        case 400:
            return QStringLiteral("Request failed: the upstream platform rejected the "
                                  "parameters (injected by the fake upstream).");
        case 402:
            return QStringLiteral("Insufficient balance (injected by the fake upstream).");
        case 403:
            return QStringLiteral("Forbidden (injected by the fake upstream).");
        case 404:
            return QStringLiteral("Not found (injected by the fake upstream).");
        case 429:
            return QStringLiteral("Too many requests, please slow down (injected by the fake "
                                  "upstream).");
        default:
            if (status >= 500)
                return QStringLiteral("An error occurred, your account will not be charged for "
                                      "this request due to the error (injected HTTP %1 by the "
                                      "fake upstream).")
                    .arg(status);
            return QStringLiteral("Injected HTTP %1 (fake upstream).").arg(status);
        }
    }

    Json echo() const
    {
        Json headers = Json::array();
        for (const auto &h : m_http.headers)
            headers.push(h.first);
        const QByteArray authorization = m_http.header("authorization");
        const QByteArray apiKey = m_http.header("x-api-key");
        return Json::object()
            .add("method", m_http.method)
            .add("path", m_http.path)
            .add("query", QString::fromUtf8(m_rawQuery))
            .add("authorization", m_http.hasHeader("authorization")
                                      ? Json(QString::fromUtf8(authorization))
                                      : Json())
            .add("x_api_key",
                 m_http.hasHeader("x-api-key") ? Json(QString::fromUtf8(apiKey)) : Json())
            .add("content_type", m_http.hasHeader("content-type")
                                     ? Json(QString::fromUtf8(m_http.header("content-type")))
                                     : Json())
            .add("body", m_http.method == "POST" ? Json(QString::fromUtf8(m_http.body)) : Json())
            .add("headers", std::move(headers));
    }

    // The video actions' data (SocialVideoFakes), read from the query as the upstream reads it.
    std::optional<QJsonObject> videoData() const
    {
        QUrlQuery query;
        for (const auto &[name, value] : m_query)
            query.addQueryItem(QString::fromLatin1(QUrl::toPercentEncoding(name)),
                               QString::fromLatin1(QUrl::toPercentEncoding(value)));
        return SocialVideoFakes::data(m_http.path.mid(kApiPrefix.size()), query);
    }

    QByteArray envelope(const Plan &plan, const QByteArray &docs) const
    {
        Json data = Json::object();
        data.add("echo", echo());
        if (const auto video = videoData()) {
            for (auto it = video->constBegin(); it != video->constEnd(); ++it)
                data.add(it.key().toUtf8().constData(), Json::fromQt(it.value()));
        }
        const bool success = plan.code == 200;
        const Now t = now();
        return Json::object()
            .add("code", plan.code)
            .add("request_id", "00000000-0000-4000-8000-" +
                                   QByteArray::number(m_request.seq, 16).rightJustified(12, '0'))
            .add("message",
                 success ? QStringLiteral("Request successful. This request will incur a charge.")
                         : QStringLiteral("Request failed (x-fake-code=%1, injected by the fake "
                                          "upstream). This request will not be charged.")
                               .arg(plan.code))
            .add("message_zh", success ? "请求成功，本次请求将被计费。"
                                       : "请求失败（由假上游注入），本次请求不计费。")
            .add("support", kSupport)
            .add("time", t.text)
            .add("time_stamp", t.stamp)
            .add("time_zone", t.zone)
            .add("docs", docs.isEmpty() ? Json() : Json(docs))
            .add("router", m_http.path)
            .add("params", paramsJson(m_query))
            .add("data", std::move(data))
            .toJson();
    }

    FakeUpstream &m_owner;
    const FakeOptions &m_options;
    const SocialFakes::Request &m_request;
    const HttpRequest &m_http;
    QByteArray m_rawQuery;
    QList<QPair<QString, QString>> m_query;
    QByteArray m_key;
};

// A JSON pointer's reference ("#/components/schemas/X") inside the document, followed until a
// value that is not a reference.
QJsonObject resolve(const QJsonObject &root, QJsonObject value)
{
    for (int depth = 0; depth < 8 && value.contains(QLatin1String("$ref")); ++depth) {
        const QString ref = value.value(QLatin1String("$ref")).toString();
        if (!ref.startsWith(QLatin1String("#/")))
            break;
        QJsonValue at = root;
        for (QString part : ref.mid(2).split(QLatin1Char('/'))) {
            part.replace(QLatin1String("~1"), QLatin1String("/"));
            part.replace(QLatin1String("~0"), QLatin1String("~"));
            at = at.toObject().value(part);
        }
        value = at.toObject();
    }
    return value;
}

} // namespace

// ------------------------------------------------------------------------------ SocialFakes

std::unique_ptr<SocialFakes::Catalog> SocialFakes::Catalog::load(const QString &file,
                                                                 QString *error)
{
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly)) {
        *error =
            QStringLiteral("cannot read the OpenAPI document %1: %2").arg(file, f.errorString());
        return nullptr;
    }
    auto catalog = std::make_unique<Catalog>();
    catalog->m_document = f.readAll();
    QJsonParseError parseError;
    const QJsonObject root = QJsonDocument::fromJson(catalog->m_document, &parseError).object();
    const QJsonObject paths = root.value(QLatin1String("paths")).toObject();
    if (parseError.error != QJsonParseError::NoError || paths.isEmpty()) {
        *error = QStringLiteral("%1 is not an OpenAPI document with paths (%2)")
                     .arg(file, parseError.errorString());
        return nullptr;
    }
    const bool securedByDefault = !root.value(QLatin1String("security")).toArray().isEmpty();
    static const char *const kMethods[] = {"get", "post", "put", "patch", "delete"};
    for (auto p = paths.begin(); p != paths.end(); ++p) {
        const QJsonObject item = resolve(root, p.value().toObject());
        const QJsonArray shared = item.value(QLatin1String("parameters")).toArray();
        QHash<QByteArray, Operation> operations;
        for (const char *method : kMethods) {
            if (!item.contains(QLatin1String(method)))
                continue;
            const QJsonObject op = item.value(QLatin1String(method)).toObject();
            Operation o;
            QJsonArray parameters = shared;
            for (const QJsonValue &v : op.value(QLatin1String("parameters")).toArray())
                parameters.append(v);
            for (const QJsonValue &v : parameters) {
                const QJsonObject parameter = resolve(root, v.toObject());
                const QString name = parameter.value(QLatin1String("name")).toString();
                if (parameter.value(QLatin1String("in")).toString() == QLatin1String("query") &&
                    parameter.value(QLatin1String("required")).toBool() &&
                    !o.requiredQuery.contains(name))
                    o.requiredQuery.append(name);
            }
            o.secured = op.contains(QLatin1String("security"))
                            ? !op.value(QLatin1String("security")).toArray().isEmpty()
                            : securedByDefault;
            if (op.contains(QLatin1String("requestBody"))) {
                const QJsonObject body =
                    resolve(root, op.value(QLatin1String("requestBody")).toObject());
                o.bodyRequired = body.value(QLatin1String("required")).toBool();
                const QJsonObject content = body.value(QLatin1String("content")).toObject();
                o.jsonBody = content.contains(QLatin1String("application/json"));
                const QJsonObject schema =
                    resolve(root, content.value(QLatin1String("application/json"))
                                      .toObject()
                                      .value(QLatin1String("schema"))
                                      .toObject());
                for (const QJsonValue &v : schema.value(QLatin1String("required")).toArray())
                    o.requiredBody.append(v.toString());
            }
            const QString tag = op.value(QLatin1String("tags")).toArray().at(0).toString();
            const QString id = op.value(QLatin1String("operationId")).toString();
            if (!tag.isEmpty() && !id.isEmpty())
                o.docs = kDocsBase + tag.toUtf8() + '/' + id.toUtf8();
            operations.insert(QByteArray(method).toUpper(), o);
            ++catalog->m_operations;
        }
        if (!operations.isEmpty())
            catalog->m_paths.insert(p.key(), operations);
    }
    if (!catalog->m_operations) {
        *error =
            QStringLiteral("%1 declares no GET, POST, PUT, PATCH or DELETE operation").arg(file);
        return nullptr;
    }
    return catalog;
}

const QHash<QByteArray, SocialFakes::Operation> *
SocialFakes::Catalog::find(const QString &path) const
{
    const auto it = m_paths.constFind(path);
    return it == m_paths.cend() ? nullptr : &*it;
}

bool SocialFakes::claims(const Catalog &catalog, const QString &path)
{
    return path == kDocumentPath || catalog.find(path);
}

void SocialFakes::answer(FakeUpstream &owner, const FakeOptions &options, const Catalog &catalog,
                         const Request &request)
{
    Call call(owner, options, request);
    if (const auto *operations = catalog.find(request.exchange->request().path))
        call.answerOperation(*operations);
    else
        call.answerDocument(catalog);
}

QList<QPair<QString, QString>> SocialFakes::parseQuery(const QByteArray &raw)
{
    QList<QPair<QString, QString>> items;
    for (const QByteArray &piece : raw.split('&')) {
        if (piece.isEmpty())
            continue;
        const qsizetype eq = piece.indexOf('=');
        items.append({formDecode(eq < 0 ? piece : piece.left(eq)),
                      eq < 0 ? QString() : formDecode(piece.mid(eq + 1))});
    }
    return items;
}
