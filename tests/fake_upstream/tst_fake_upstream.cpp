// Black-box tests of the fake_upstream program: started as a QProcess, spoken to over plain
// sockets so the exact bytes (status line, headers, chunked framing, SSE events) are checked.

#include <QDateTime>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QtEndian>
#include <QTest>
#include <QUrl>

#include <memory>
#include <sys/resource.h>

namespace {

using Headers = QList<QPair<QByteArray, QByteArray>>;

const QByteArray kOpenAiKey = "sk-test-abcd1234wxyz";
const QByteArray kAnthropicKey = "sk-ant-test-5678qrst";

Headers openAi(Headers extra = {})
{
    Headers h{{"Authorization", "Bearer " + kOpenAiKey}, {"Content-Type", "application/json"}};
    return h + extra;
}

Headers anthropic(Headers extra = {})
{
    Headers h{{"x-api-key", kAnthropicKey},
              {"anthropic-version", "2023-06-01"},
              {"Content-Type", "application/json"}};
    return h + extra;
}

QByteArray toJson(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

QJsonArray userSays(const QString &text)
{
    return QJsonArray{QJsonObject{{"role", "user"}, {"content", text}}};
}

QByteArray chatBody(const QString &text, QJsonObject extra = {})
{
    extra.insert("model", "fake-model");
    extra.insert("messages", userSays(text));
    return toJson(extra);
}

QByteArray messagesBody(const QString &text, QJsonObject extra = {})
{
    extra.insert("model", "fake-model");
    if (!extra.contains("max_tokens"))
        extra.insert("max_tokens", 1024);
    extra.insert("messages", userSays(text));
    return toJson(extra);
}

QByteArray responsesBody(const QString &text, QJsonObject extra = {})
{
    extra.insert("model", "fake-model");
    extra.insert("input", text);
    return toJson(extra);
}

const QJsonArray kChatTools{QJsonObject{
    {"type", "function"},
    {"function",
     QJsonObject{
         {"name", "get_weather"},
         {"parameters",
          QJsonObject{{"type", "object"},
                      {"properties", QJsonObject{{"location", QJsonObject{{"type", "string"}}}}},
                      {"required", QJsonArray{"location"}}}}}}}};

// A parsed (possibly partial) HTTP/1.1 response.
struct Reply
{
    int status = 0;
    Headers headers; // names lowercased
    QByteArray body; // the payload, de-chunked
    QList<QByteArray> chunks;
    bool chunked = false;
    bool complete = false; // the whole message arrived (final chunk or Content-Length)
    bool closed = false;   // the server closed or reset the connection

    QByteArray header(const QByteArray &name) const
    {
        for (const auto &h : headers)
            if (h.first == name)
                return h.second;
        return {};
    }
    QJsonObject json() const { return QJsonDocument::fromJson(body).object(); }
};

Reply parseResponse(const QByteArray &raw)
{
    Reply r;
    const qsizetype end = raw.indexOf("\r\n\r\n");
    if (end < 0)
        return r;
    const QList<QByteArray> lines = raw.left(end).split('\n');
    r.status = lines.first().split(' ').value(1).toInt();
    qint64 length = -1;
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const QByteArray line = lines[i].trimmed();
        const qsizetype colon = line.indexOf(':');
        const QByteArray name = line.left(colon).toLower();
        const QByteArray value = line.mid(colon + 1).trimmed();
        r.headers.append({name, value});
        if (name == "content-length")
            length = value.toLongLong();
        if (name == "transfer-encoding" && value == "chunked")
            r.chunked = true;
    }
    QByteArray rest = raw.mid(end + 4);
    if (!r.chunked) {
        r.body = length >= 0 ? rest.left(length) : rest;
        r.complete = length >= 0 && rest.size() >= length;
        return r;
    }
    for (;;) {
        const qsizetype eol = rest.indexOf("\r\n");
        if (eol < 0)
            return r;
        bool ok = false;
        const qint64 size = rest.left(eol).toLongLong(&ok, 16);
        if (!ok || rest.size() < eol + 2 + size + 2)
            return r;
        if (size == 0) {
            r.complete = true;
            return r;
        }
        const QByteArray data = rest.mid(eol + 2, size);
        r.chunks << data;
        r.body += data;
        rest.remove(0, eol + 2 + size + 2);
    }
}

QByteArray requestBytes(const QByteArray &method, const QByteArray &path, const Headers &headers,
                        const QByteArray &body)
{
    QByteArray out = method + ' ' + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (const auto &h : headers)
        out += h.first + ": " + h.second + "\r\n";
    if (!body.isEmpty() || method == "POST")
        out += "Content-Length: " + QByteArray::number(body.size()) + "\r\n";
    return out + "\r\n" + body;
}

// One request on its own connection, read with blocking waits (the server is another process).
class Client
{
public:
    explicit Client(quint16 port) : m_port(port) {}

    bool send(const QByteArray &method, const QByteArray &path, const Headers &headers,
              const QByteArray &body = {})
    {
        m_socket.connectToHost(QHostAddress::LocalHost, m_port);
        if (!m_socket.waitForConnected(5000))
            return false;
        m_socket.write(requestBytes(method, path, headers, body));
        return m_socket.waitForBytesWritten(5000);
    }

    // Reads until the response is complete, the connection closes, or the time is up.
    Reply read(int timeoutMs = 10'000)
    {
        QElapsedTimer timer;
        timer.start();
        Reply reply = parseResponse(m_raw);
        while (!reply.complete) {
            const int left = timeoutMs - int(timer.elapsed());
            if (left <= 0)
                break;
            if (!m_socket.waitForReadyRead(left)) {
                m_raw += m_socket.readAll();
                reply = parseResponse(m_raw);
                reply.closed = m_socket.state() != QAbstractSocket::ConnectedState;
                if (reply.closed)
                    break;
                continue;
            }
            m_raw += m_socket.readAll();
            arrivals.append({timer.elapsed(), m_raw.size()});
            reply = parseResponse(m_raw);
        }
        return reply;
    }

    QTcpSocket &socket() { return m_socket; }
    const QByteArray &raw() const { return m_raw; }
    QList<QPair<qint64, qsizetype>> arrivals; // (ms since read(), bytes so far)

private:
    quint16 m_port;
    QTcpSocket m_socket;
    QByteArray m_raw;
};

struct SseEvent
{
    QByteArray event;
    QByteArray data;
};

QList<SseEvent> parseSse(const QByteArray &body)
{
    QList<SseEvent> events;
    qsizetype from = 0;
    while (from < body.size()) {
        qsizetype end = body.indexOf("\n\n", from);
        if (end < 0)
            end = body.size();
        SseEvent e;
        for (const QByteArray &line : body.mid(from, end - from).split('\n')) {
            if (line.startsWith("event: "))
                e.event = line.mid(7);
            else if (line.startsWith("data: "))
                e.data = line.mid(6);
        }
        if (!e.event.isEmpty() || !e.data.isEmpty())
            events << e;
        from = end + 2;
    }
    return events;
}

QJsonObject jsonOf(const SseEvent &e)
{
    return QJsonDocument::fromJson(e.data).object();
}

bool parses(const QByteArray &json)
{
    QJsonParseError error;
    QJsonDocument::fromJson(json, &error);
    return error.error == QJsonParseError::NoError;
}

// CRC-32 bit by bit (the fake uses a table), so a PNG is checked by independent code.
quint32 bitwiseCrc32(const QByteArray &data)
{
    quint32 crc = 0xFFFFFFFFu;
    for (const char byte : data) {
        crc ^= quint8(byte);
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

quint32 bigEndian32(const QByteArray &bytes, qsizetype at)
{
    return qFromBigEndian<quint32>(bytes.constData() + at);
}

// A decoded PNG: its IHDR size and the inflated scanlines (a filter byte, then RGB, per row).
struct Png
{
    int width = 0;
    int height = 0;
    QByteArray scanlines;
    QString error; // empty when the file is sound
};

// Reads a PNG as a decoder does: the signature, every chunk's length and CRC, IHDR first
// (8-bit RGB, not interlaced), IEND last with nothing after it, and the IDAT zlib stream
// (its Adler-32 checked by zlib) inflated to exactly height rows of 1 + 3 * width bytes,
// each with a valid filter type.
Png readPng(const QByteArray &file)
{
    Png png;
    if (!file.startsWith(QByteArray("\x89PNG\r\n\x1a\n", 8))) {
        png.error = QStringLiteral("no PNG signature");
        return png;
    }
    QList<QByteArray> types;
    QByteArray header;
    QByteArray stream;
    qsizetype at = 8;
    while (at + 12 <= file.size()) {
        const qsizetype length = bigEndian32(file, at);
        if (at + 12 + length > file.size())
            break;
        const QByteArray typed = file.mid(at + 4, 4 + length);
        if (bigEndian32(file, at + 8 + length) != bitwiseCrc32(typed)) {
            png.error =
                QStringLiteral("bad CRC in chunk %1").arg(QString::fromLatin1(typed.left(4)));
            return png;
        }
        types << typed.left(4);
        if (types.last() == "IHDR")
            header = typed.mid(4);
        else if (types.last() == "IDAT")
            stream += typed.mid(4);
        at += 12 + length;
    }
    if (at != file.size() || types.isEmpty() || types.first() != "IHDR" || types.last() != "IEND" ||
        header.size() != 13) {
        png.error =
            QStringLiteral("bad chunk layout: %1").arg(QString::fromLatin1(types.join(',')));
        return png;
    }
    png.width = int(bigEndian32(header, 0));
    png.height = int(bigEndian32(header, 4));
    if (header.mid(8) != QByteArray("\x08\x02\x00\x00\x00", 5)) {
        png.error = QStringLiteral("not 8-bit RGB without interlace");
        return png;
    }
    const qsizetype stride = 1 + 3 * qsizetype(png.width);
    // qUncompress takes the expected size in front of the zlib stream.
    QByteArray sized(4, '\0');
    qToBigEndian(quint32(stride * png.height), sized.data());
    png.scanlines = qUncompress(sized + stream);
    if (png.scanlines.size() != stride * png.height) {
        png.error = QStringLiteral("IDAT inflates to %1 bytes, not %2")
                        .arg(png.scanlines.size())
                        .arg(stride * png.height);
        return png;
    }
    for (int y = 0; y < png.height; ++y) {
        if (quint8(png.scanlines[y * stride]) > 4) {
            png.error = QStringLiteral("row %1 has filter type %2")
                            .arg(y)
                            .arg(quint8(png.scanlines[y * stride]));
            return png;
        }
    }
    return png;
}

// The PNG files of an images answer with b64_json items (empty on a malformed item).
QList<QByteArray> b64Images(const QJsonObject &answer)
{
    QList<QByteArray> files;
    for (const QJsonValue &item : answer[u"data"].toArray()) {
        const auto file = QByteArray::fromBase64Encoding(item[u"b64_json"].toString().toLatin1(),
                                                         QByteArray::AbortOnBase64DecodingErrors);
        files << (file ? *file : QByteArray());
    }
    return files;
}

class FakeProcess
{
public:
    ~FakeProcess() { stop(); }

    bool start(const QStringList &args = {})
    {
        m_process.setProgram(QStringLiteral(FAKE_UPSTREAM_PATH));
        m_process.setArguments(args);
        m_process.start();
        if (!m_process.waitForStarted(5000))
            return false;
        QElapsedTimer timer;
        timer.start();
        while (!m_process.canReadLine() && timer.elapsed() < 10'000)
            m_process.waitForReadyRead(200);
        firstLine = m_process.readLine();
        static const QRegularExpression re(
            QStringLiteral("^listening on http://127\\.0\\.0\\.1:(\\d+)\\n$"));
        const auto m = re.match(QString::fromUtf8(firstLine));
        if (!m.hasMatch()) {
            qWarning() << "fake_upstream said" << firstLine << m_process.readAllStandardError();
            return false;
        }
        port = quint16(m.captured(1).toUInt());
        return true;
    }

    void stop()
    {
        if (m_process.state() != QProcess::NotRunning) {
            m_process.kill();
            m_process.waitForFinished(5000);
        }
    }

    QJsonObject stats() const
    {
        Client c(port);
        c.send("GET", "/fake/stats", {});
        return c.read(5000).json();
    }

    void resetStats() const
    {
        Client c(port);
        c.send("POST", "/fake/reset", {});
        c.read(5000);
    }

    QProcess &process() { return m_process; }
    quint16 port = 0;
    QByteArray firstLine;

private:
    QProcess m_process;
};

// The questions of a typical decisions request: one of each type.
QJsonObject decisionQuestions()
{
    return {{"holds", QJsonObject{{"type", "noul"}, {"instructions", "Is the user satisfied?"}}},
            {"pick", QJsonObject{{"type", "choice"},
                                 {"instructions", "Which team handles it?"},
                                 {"criteria", QJsonObject{{"billing", "Invoices and refunds"},
                                                          {"support", "Something is broken"},
                                                          {"sales", QJsonValue()}}}}},
            {"rate", QJsonObject{{"type", "score"},
                                 {"instructions", "How urgent is it?"},
                                 {"criteria", QJsonArray{"none", "low", "high", "critical"}}}}};
}

QByteArray decisionBody(const QJsonValue &state, const QJsonObject &questions = decisionQuestions())
{
    return toJson({{"model", "fakeai/echo-small"}, {"state", state}, {"questions", questions}});
}

// A probability of a decisions answer in the fake's units (1/10000), checking it is one.
qint64 probabilityUnits(const QJsonValue &value)
{
    const double p = value.toDouble(-1);
    if (!value.isDouble() || p < 0 || p > 1)
        return -1;
    return qRound64(p * 10000);
}

const QByteArray kSocialKey = "th-test-key-0123456789";
const QByteArray kVideoAction = "/api/v1/douyin/app/v3/fetch_one_video";

// What the social-data relay sends: its upstream key and Accept.
Headers tikhub(Headers extra = {})
{
    Headers h{{"Authorization", "Bearer " + kSocialKey}, {"Accept", "application/json"}};
    return h + extra;
}

QByteArray readFile(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

} // namespace

// In a test of the social fake: skips when the OpenAPI document is not there.
#define REQUIRE_SOCIAL()                                                                           \
    do {                                                                                           \
        if (!m_social.port)                                                                        \
            QSKIP("no OpenAPI document at " SOCIAL_OPENAPI);                                       \
    } while (false)

class TestFakeUpstream : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    FakeProcess m_fake;
    QString m_logPath;
    FakeProcess m_social; // with --social-openapi; port 0 when the document is missing
    QString m_socialLogPath;

    // A request to the social fake on its own connection.
    Reply social(const QByteArray &method, const QByteArray &target,
                 const Headers &headers = tikhub(), const QByteArray &body = {},
                 int timeoutMs = 10'000)
    {
        Client c(m_social.port);
        if (!c.send(method, target, headers, body))
            return {};
        return c.read(timeoutMs);
    }

    Reply post(const QByteArray &path, const QByteArray &body, const Headers &headers,
               int timeoutMs = 10'000)
    {
        Client c(m_fake.port);
        if (!c.send("POST", path, headers, body))
            return {};
        return c.read(timeoutMs);
    }
    Reply get(const QByteArray &path, const Headers &headers = {})
    {
        Client c(m_fake.port);
        if (!c.send("GET", path, headers))
            return {};
        return c.read();
    }

    // A validation row (columns body, param, code, message): a 400 in OpenAI's error shape.
    void checkInvalidRequest(const QByteArray &path)
    {
        QFETCH(QByteArray, body);
        QFETCH(QString, param);
        QFETCH(QString, code);
        QFETCH(QString, message);
        const Reply r = post(path, body, openAi());
        QCOMPARE(r.status, 400);
        const QJsonObject error = r.json()[u"error"].toObject();
        QCOMPARE(error.keys(), QStringList({"code", "message", "param", "type"}));
        QCOMPARE(error[u"type"].toString(), "invalid_request_error");
        QVERIFY2(error[u"message"].toString().startsWith(message),
                 qPrintable(error[u"message"].toString()));
        QCOMPARE(error[u"param"], param.isEmpty() ? QJsonValue() : QJsonValue(param));
        QCOMPARE(error[u"code"], code.isEmpty() ? QJsonValue() : QJsonValue(code));
    }

    // The columns checkFaultRow reads.
    static void addFaultColumns()
    {
        QTest::addColumn<QByteArray>("header"); // x-fake-fault, or empty
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("type");
        QTest::addColumn<QByteArray>("retryAfter");
    }

    // A fault row (columns header: x-fake-fault or empty, status, type, retryAfter): the status,
    // retry-after and OpenAI's error body. *reply: the answer, for the caller's 200 checks.
    void checkFaultRow(const QByteArray &path, const QByteArray &body, Reply *reply)
    {
        QFETCH(QByteArray, header);
        QFETCH(int, status);
        QFETCH(QString, type);
        QFETCH(QByteArray, retryAfter);
        const Headers extra = header.isEmpty() ? Headers() : Headers{{"x-fake-fault", header}};
        const Reply r = post(path, body, openAi(extra));
        *reply = r;
        QCOMPARE(r.status, status);
        QCOMPARE(r.header("retry-after"), retryAfter);
        if (status == 200)
            return;
        const QJsonObject error = r.json()[u"error"].toObject();
        QCOMPARE(error.keys(), QStringList({"code", "message", "param", "type"}));
        QCOMPARE(error[u"type"].toString(), type);
        QCOMPARE(error[u"code"], status == 429 ? QJsonValue("rate_limit_exceeded") : QJsonValue());
    }

private slots:
    void initTestCase()
    {
        // The concurrency test opens a thousand sockets.
        rlimit limit{};
        if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
            limit.rlim_cur = limit.rlim_max;
            ::setrlimit(RLIMIT_NOFILE, &limit);
        }
        QVERIFY(m_dir.isValid());
        m_logPath = m_dir.filePath(QStringLiteral("requests.log"));
        QVERIFY(m_fake.start({QStringLiteral("--log"), m_logPath}));
        m_socialLogPath = m_dir.filePath(QStringLiteral("social.log"));
        if (QFile::exists(QStringLiteral(SOCIAL_OPENAPI)))
            QVERIFY(
                m_social.start({QStringLiteral("--social-openapi"), QStringLiteral(SOCIAL_OPENAPI),
                                QStringLiteral("--log"), m_socialLogPath}));
    }

    void cleanupTestCase()
    {
        m_fake.stop();
        m_social.stop();
    }

    void startupLine()
    {
        QVERIFY(m_fake.firstLine.startsWith("listening on http://127.0.0.1:"));
        QCOMPARE(m_fake.firstLine,
                 "listening on http://127.0.0.1:" + QByteArray::number(m_fake.port) + "\n");
    }

    // ------------------------------------------------------------------ chat completions

    void chatNonStreaming()
    {
        const Reply r = post("/v1/chat/completions", chatBody("hello big world"), openAi());
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        QVERIFY(r.header("x-request-id").startsWith("req_"));
        const QJsonObject o = r.json();
        QCOMPARE(o[u"object"].toString(), "chat.completion");
        QVERIFY(o[u"id"].toString().startsWith("chatcmpl-"));
        QCOMPARE(o[u"model"].toString(), "fake-model");
        QVERIFY(o[u"created"].toInteger() > 1'600'000'000);
        QVERIFY(o[u"system_fingerprint"].isString());
        const QJsonObject choice = o[u"choices"].toArray().at(0).toObject();
        QCOMPARE(choice[u"index"].toInt(), 0);
        QCOMPARE(choice[u"message"][u"role"].toString(), "assistant");
        QCOMPARE(choice[u"message"][u"content"].toString(), "Echo: hello big world");
        QVERIFY(!choice[u"message"].toObject().contains("tool_calls"));
        QCOMPARE(choice[u"finish_reason"].toString(), "stop");
        QVERIFY(choice[u"logprobs"].isNull());
        const QJsonObject usage = o[u"usage"].toObject();
        QCOMPARE(usage[u"prompt_tokens"].toInt(), 3 + 3);
        QCOMPARE(usage[u"completion_tokens"].toInt(), 8);
        QCOMPARE(usage[u"total_tokens"].toInt(), 14);
        QCOMPARE(usage[u"prompt_tokens_details"][u"cached_tokens"].toInt(), 0);
    }

    void chatStreamBytes()
    {
        const Reply r =
            post("/v1/chat/completions",
                 chatBody("hi", {{"stream", true},
                                 {"stream_options", QJsonObject{{"include_usage", true}}}}),
                 openAi({{"x-fake-chunks", "2"}}));
        QCOMPARE(r.status, 200);
        QVERIFY(r.complete);
        QVERIFY(r.chunked);
        QCOMPARE(r.header("content-type"), QByteArray("text/event-stream; charset=utf-8"));
        const QJsonObject first = QJsonDocument::fromJson(parseSse(r.body).first().data).object();
        const QByteArray head = "data: {\"id\":\"" + first[u"id"].toString().toUtf8() +
                                "\",\"object\":\"chat.completion.chunk\",\"created\":" +
                                QByteArray::number(first[u"created"].toInteger()) +
                                ",\"model\":\"fake-model\",\"service_tier\":\"default\","
                                "\"system_fingerprint\":\"fp_fake0001\",";
        const QByteArray open = "\"choices\":[{\"index\":0,\"delta\":";
        const QList<QByteArray> expected{
            head + open +
                "{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},\"logprobs\":null,"
                "\"finish_reason\":null}],\"usage\":null}"
                "\n\n",
            head + open +
                "{\"content\":\"Echo\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}"
                "\n\n",
            head + open +
                "{\"content\":\": hi\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}"
                "\n\n",
            head + open +
                "{},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":null}"
                "\n\n",
            head + "\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,"
                   "\"total_tokens\":6,\"prompt_tokens_details\":{\"cached_tokens\":0,"
                   "\"audio_tokens\":0},\"completion_tokens_details\":{\"reasoning_tokens\":0,"
                   "\"audio_tokens\":0,\"accepted_prediction_tokens\":0,"
                   "\"rejected_prediction_tokens\":0}}}"
                   "\n\n",
            "data: [DONE]\n\n"};
        // One SSE event per HTTP chunk, byte for byte.
        QCOMPARE(r.chunks, expected);
    }

    void chatStreamWithoutUsage()
    {
        const Reply r =
            post("/v1/chat/completions", chatBody("one two", {{"stream", true}}), openAi());
        QVERIFY(r.complete);
        const QList<SseEvent> events = parseSse(r.body);
        QCOMPARE(events.size(), 1 + 8 + 1 + 1); // role, pieces, finish, [DONE]
        QCOMPARE(events.last().data, QByteArray("[DONE]"));
        QString text;
        for (qsizetype i = 0; i + 1 < events.size(); ++i) {
            const QJsonObject o = jsonOf(events[i]);
            QVERIFY2(!o.contains("usage"), events[i].data.constData());
            QCOMPARE(o[u"choices"].toArray().size(), 1);
            text += o[u"choices"][0][u"delta"][u"content"].toString();
        }
        QCOMPARE(text, "Echo: one two");
        QCOMPARE(jsonOf(events[9])[u"choices"][0][u"finish_reason"].toString(), "stop");
    }

    void chatToolCall()
    {
        const QString question = QStringLiteral("What is the weather in Paris?");
        const QJsonObject expectedArgs{{"location", question}};
        // Non-streaming.
        Reply r =
            post("/v1/chat/completions", chatBody(question, {{"tools", kChatTools}}), openAi());
        QCOMPARE(r.status, 200);
        QJsonObject choice = r.json()[u"choices"][0].toObject();
        QCOMPARE(choice[u"finish_reason"].toString(), "tool_calls");
        QVERIFY(choice[u"message"][u"content"].isNull());
        const QJsonObject call = choice[u"message"][u"tool_calls"][0].toObject();
        QVERIFY(call[u"id"].toString().startsWith("call_"));
        QCOMPARE(call[u"type"].toString(), "function");
        QCOMPARE(call[u"function"][u"name"].toString(), "get_weather");
        QCOMPARE(
            QJsonDocument::fromJson(call[u"function"][u"arguments"].toString().toUtf8()).object(),
            expectedArgs);
        QCOMPARE(r.json()[u"usage"][u"completion_tokens"].toInt(), 8);

        // Streaming: id, type and name first, then argument fragments.
        r = post("/v1/chat/completions",
                 chatBody(question, {{"tools", kChatTools}, {"stream", true}}),
                 openAi({{"x-fake-chunks", "5"}}));
        QVERIFY(r.complete);
        const QList<SseEvent> events = parseSse(r.body);
        QCOMPARE(events.size(), 1 + 5 + 1 + 1);
        const QJsonObject firstCall =
            jsonOf(events[0])[u"choices"][0][u"delta"][u"tool_calls"][0].toObject();
        QCOMPARE(firstCall[u"index"].toInt(), 0);
        QVERIFY(firstCall[u"id"].toString().startsWith("call_"));
        QCOMPARE(firstCall[u"type"].toString(), "function");
        QCOMPARE(firstCall[u"function"][u"name"].toString(), "get_weather");
        QCOMPARE(firstCall[u"function"][u"arguments"].toString(), QString());
        QString arguments;
        for (int i = 1; i <= 5; ++i) {
            const QJsonObject delta =
                jsonOf(events[i])[u"choices"][0][u"delta"][u"tool_calls"][0].toObject();
            QCOMPARE(delta[u"index"].toInt(), 0);
            QVERIFY(!delta.contains("id"));
            arguments += delta[u"function"][u"arguments"].toString();
        }
        QCOMPARE(QJsonDocument::fromJson(arguments.toUtf8()).object(), expectedArgs);
        QCOMPARE(jsonOf(events[6])[u"choices"][0][u"finish_reason"].toString(), "tool_calls");

        // The header forces a call without the trigger word; a tool result gets text back.
        r = post("/v1/chat/completions", chatBody("no trigger", {{"tools", kChatTools}}),
                 openAi({{"x-fake-tool", "1"}}));
        QCOMPARE(r.json()[u"choices"][0][u"finish_reason"].toString(), "tool_calls");
        QJsonArray conversation = userSays(question);
        conversation.append(QJsonObject{{"role", "assistant"},
                                        {"tool_calls", QJsonArray{call}},
                                        {"content", QJsonValue::Null}});
        conversation.append(
            QJsonObject{{"role", "tool"}, {"tool_call_id", call[u"id"]}, {"content", "sunny"}});
        r = post("/v1/chat/completions",
                 toJson({{"model", "m"}, {"messages", conversation}, {"tools", kChatTools}}),
                 openAi());
        choice = r.json()[u"choices"][0].toObject();
        QCOMPARE(choice[u"finish_reason"].toString(), "stop");
        QCOMPARE(choice[u"message"][u"content"].toString(), "Echo: " + question);
    }

    void chatJsonMode()
    {
        for (const QByteArray chunks : {"8", "64"}) {
            const Reply r =
                post("/v1/chat/completions",
                     chatBody("a \"quoted\" text",
                              {{"response_format", QJsonObject{{"type", "json_object"}}}}),
                     openAi({{"x-fake-chunks", chunks}}));
            const QString content = r.json()[u"choices"][0][u"message"][u"content"].toString();
            QJsonParseError error;
            const QJsonDocument doc = QJsonDocument::fromJson(content.toUtf8(), &error);
            QCOMPARE(error.error, QJsonParseError::NoError);
            QVERIFY(doc.isObject());
            QCOMPARE(doc.object()[u"echo"].toString(), "a \"quoted\" text");
        }
    }

    // ------------------------------------------------------------------ responses

    void responsesNonStreaming()
    {
        const Reply r = post("/v1/responses",
                             responsesBody("hi there", {{"instructions", "be brief"}}), openAi());
        QCOMPARE(r.status, 200);
        const QJsonObject o = r.json();
        QVERIFY(o[u"id"].toString().startsWith("resp_"));
        QCOMPARE(o[u"object"].toString(), "response");
        QCOMPARE(o[u"status"].toString(), "completed");
        QVERIFY(o[u"created_at"].toInteger() > 1'600'000'000);
        QCOMPARE(o[u"instructions"].toString(), "be brief");
        const QJsonObject item = o[u"output"][0].toObject();
        QCOMPARE(item[u"type"].toString(), "message");
        QVERIFY(item[u"id"].toString().startsWith("msg_"));
        QCOMPARE(item[u"status"].toString(), "completed");
        QCOMPARE(item[u"role"].toString(), "assistant");
        const QJsonObject part = item[u"content"][0].toObject();
        QCOMPARE(part[u"type"].toString(), "output_text");
        QCOMPARE(part[u"text"].toString(), "Echo: hi there");
        QCOMPARE(part[u"annotations"].toArray().size(), 0);
        const QJsonObject usage = o[u"usage"].toObject();
        QCOMPARE(usage[u"input_tokens"].toInt(), (3 + 2) + (3 + 2));
        QCOMPARE(usage[u"output_tokens"].toInt(), 8);
        QCOMPARE(usage[u"total_tokens"].toInt(), 18);
        QCOMPARE(usage[u"input_tokens_details"][u"cached_tokens"].toInt(), 0);
        QCOMPARE(usage[u"output_tokens_details"][u"reasoning_tokens"].toInt(), 0);
    }

    void responsesStreaming()
    {
        const Reply r = post("/v1/responses", responsesBody("hi there", {{"stream", true}}),
                             openAi({{"x-fake-chunks", "3"}}));
        QVERIFY(r.complete);
        const QList<SseEvent> events = parseSse(r.body);
        const QList<QByteArray> expectedTypes{
            "response.created",           "response.in_progress",
            "response.output_item.added", "response.content_part.added",
            "response.output_text.delta", "response.output_text.delta",
            "response.output_text.delta", "response.output_text.done",
            "response.content_part.done", "response.output_item.done",
            "response.completed"};
        QList<QByteArray> types;
        QString text;
        for (qsizetype i = 0; i < events.size(); ++i) {
            const QJsonObject o = jsonOf(events[i]);
            types << events[i].event;
            QCOMPARE(o[u"type"].toString().toUtf8(), events[i].event);
            QCOMPARE(o[u"sequence_number"].toInt(), i);
            if (events[i].event == "response.output_text.delta")
                text += o[u"delta"].toString();
        }
        QCOMPARE(types, expectedTypes);
        QCOMPARE(text, "Echo: hi there");
        QVERIFY(events[0].data.startsWith("{\"type\":\"response.created\",\"sequence_number\":0,"
                                          "\"response\":{\"id\":\"resp_"));
        const QJsonObject created = jsonOf(events[0])[u"response"].toObject();
        QCOMPARE(created[u"status"].toString(), "in_progress");
        QVERIFY(created[u"usage"].isNull());
        const QJsonObject done = jsonOf(events.last())[u"response"].toObject();
        QCOMPARE(done[u"status"].toString(), "completed");
        QCOMPARE(done[u"output"][0][u"content"][0][u"text"].toString(), "Echo: hi there");
        QCOMPARE(done[u"usage"][u"input_tokens"].toInt(), 5);
        QCOMPARE(done[u"usage"][u"output_tokens"].toInt(), 3);
        QCOMPARE(done[u"usage"][u"total_tokens"].toInt(), 8);
        QCOMPARE(jsonOf(events[7])[u"text"].toString(), "Echo: hi there");
    }

    void responsesFunctionCall()
    {
        const QJsonArray tools{
            QJsonObject{{"type", "function"},
                        {"name", "get_weather"},
                        {"parameters", kChatTools[0][u"function"][u"parameters"]}}};
        const Reply r = post("/v1/responses",
                             responsesBody("weather in Oslo", {{"stream", true}, {"tools", tools}}),
                             openAi({{"x-fake-chunks", "4"}}));
        const QList<SseEvent> events = parseSse(r.body);
        QCOMPARE(events.size(), 3 + 4 + 3);
        const QJsonObject added = jsonOf(events[2])[u"item"].toObject();
        QCOMPARE(added[u"type"].toString(), "function_call");
        QCOMPARE(added[u"name"].toString(), "get_weather");
        QVERIFY(added[u"call_id"].toString().startsWith("call_"));
        QString arguments;
        for (int i = 3; i < 7; ++i) {
            QCOMPARE(events[i].event, QByteArray("response.function_call_arguments.delta"));
            arguments += jsonOf(events[i])[u"delta"].toString();
        }
        QCOMPARE(QJsonDocument::fromJson(arguments.toUtf8()).object()[u"location"].toString(),
                 "weather in Oslo");
        QCOMPARE(events[7].event, QByteArray("response.function_call_arguments.done"));
        QCOMPARE(jsonOf(events[9])[u"response"][u"output"][0][u"arguments"].toString(), arguments);
    }

    // ------------------------------------------------------------------ messages

    void messagesAuthAndValidation()
    {
        // No key at all.
        Reply r = post("/v1/messages", messagesBody("x"),
                       {{"anthropic-version", "2023-06-01"}, {"content-type", "application/json"}});
        QCOMPARE(r.status, 401);
        QVERIFY(r.header("request-id").startsWith("req_"));
        QCOMPARE(r.body, "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\","
                         "\"message\":\"x-api-key header is required\"},\"request_id\":\"" +
                             r.header("request-id") + "\"}");
        // No version.
        r = post("/v1/messages", messagesBody("x"),
                 {{"x-api-key", kAnthropicKey}, {"content-type", "application/json"}});
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json()[u"type"].toString(), "error");
        QCOMPARE(r.json()[u"error"][u"type"].toString(), "invalid_request_error");
        QVERIFY(r.json()[u"error"][u"message"].toString().contains("anthropic-version"));
        // The newer SDK line: Bearer and another version.
        r = post(
            "/v1/messages", messagesBody("x"),
            {{"authorization", "Bearer " + kAnthropicKey}, {"anthropic-version", "2026-10-21"}});
        QCOMPARE(r.status, 200);
        // max_tokens is required.
        r = post("/v1/messages", toJson({{"model", "m"}, {"messages", userSays("x")}}),
                 anthropic());
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json()[u"error"][u"message"].toString(), "max_tokens: Field required");
        // OpenAI endpoints need a bearer key too, and say so in their own envelope.
        r = post("/v1/chat/completions", chatBody("x"), {});
        QCOMPARE(r.status, 401);
        QCOMPARE(r.json()[u"error"][u"type"].toString(), "invalid_request_error");
    }

    void messagesNonStreaming()
    {
        const Reply r = post("/v1/messages", messagesBody("hello world", {{"system", "be brief"}}),
                             anthropic());
        QCOMPARE(r.status, 200);
        const QJsonObject o = r.json();
        QVERIFY(o[u"id"].toString().startsWith("msg_01"));
        QCOMPARE(o[u"type"].toString(), "message");
        QCOMPARE(o[u"role"].toString(), "assistant");
        QCOMPARE(o[u"model"].toString(), "fake-model");
        QCOMPARE(o[u"content"][0][u"type"].toString(), "text");
        QCOMPARE(o[u"content"][0][u"text"].toString(), "Echo: hello world");
        QCOMPARE(o[u"stop_reason"].toString(), "end_turn");
        QVERIFY(o[u"stop_sequence"].isNull());
        const QJsonObject usage = o[u"usage"].toObject();
        QCOMPARE(usage[u"input_tokens"].toInt(), (3 + 2) + (3 + 2));
        QCOMPARE(usage[u"output_tokens"].toInt(), 8);
        QCOMPARE(usage[u"cache_creation_input_tokens"].toInt(), 0);
        QCOMPARE(usage[u"cache_read_input_tokens"].toInt(), 0);
    }

    void messagesStreamBytes()
    {
        const Reply r = post("/v1/messages", messagesBody("hi", {{"stream", true}}),
                             anthropic({{"x-fake-chunks", "2"}}));
        QCOMPARE(r.status, 200);
        QVERIFY(r.complete);
        QCOMPARE(r.header("content-type"), QByteArray("text/event-stream; charset=utf-8"));
        const QByteArray id =
            jsonOf(parseSse(r.body).first())[u"message"][u"id"].toString().toUtf8();
        const QList<QByteArray> expected{
            "event: message_start\ndata: "
            "{\"type\":\"message_start\",\"message\":{\"id\":\"" +
                id +
                "\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"fake-model\","
                "\"content\":[],"
                "\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":4,"
                "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,"
                "\"output_tokens\":1}}}"
                "\n\n",
            "event: content_block_start\ndata: "
            "{\"type\":\"content_block_start\",\"index\":0,"
            "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}"
            "\n\n",
            "event: ping\ndata: {\"type\":\"ping\"}\n\n",
            "event: content_block_delta\ndata: "
            "{\"type\":\"content_block_delta\",\"index\":0,"
            "\"delta\":{\"type\":\"text_delta\",\"text\":\"Echo\"}}"
            "\n\n",
            "event: content_block_delta\ndata: "
            "{\"type\":\"content_block_delta\",\"index\":0,"
            "\"delta\":{\"type\":\"text_delta\",\"text\":\": hi\"}}"
            "\n\n",
            "event: content_block_stop\ndata: "
            "{\"type\":\"content_block_stop\",\"index\":0}"
            "\n\n",
            "event: message_delta\ndata: "
            "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\","
            "\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}"
            "\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"};
        QCOMPARE(r.chunks, expected);
    }

    void messagesToolUse()
    {
        const QJsonArray tools{QJsonObject{
            {"name", "get_weather"}, {"input_schema", kChatTools[0][u"function"][u"parameters"]}}};
        Reply r = post("/v1/messages",
                       messagesBody("weather in Rome?", {{"tools", tools}, {"stream", true}}),
                       anthropic({{"x-fake-chunks", "3"}}));
        const QList<SseEvent> events = parseSse(r.body);
        QCOMPARE(events.size(), 3 + 3 + 3);
        const QJsonObject block = jsonOf(events[1])[u"content_block"].toObject();
        QCOMPARE(block[u"type"].toString(), "tool_use");
        QVERIFY(block[u"id"].toString().startsWith("toolu_"));
        QCOMPARE(block[u"name"].toString(), "get_weather");
        QCOMPARE(block[u"input"].toObject(), QJsonObject());
        QString partial;
        for (int i = 3; i < 6; ++i) {
            QCOMPARE(jsonOf(events[i])[u"delta"][u"type"].toString(), "input_json_delta");
            partial += jsonOf(events[i])[u"delta"][u"partial_json"].toString();
        }
        QCOMPARE(QJsonDocument::fromJson(partial.toUtf8()).object(),
                 QJsonObject({{"location", "weather in Rome?"}}));
        QCOMPARE(jsonOf(events[7])[u"delta"][u"stop_reason"].toString(), "tool_use");
        QCOMPARE(jsonOf(events[7])[u"usage"][u"output_tokens"].toInt(), 3);

        r = post("/v1/messages", messagesBody("weather in Rome?", {{"tools", tools}}), anthropic());
        QCOMPARE(r.json()[u"stop_reason"].toString(), "tool_use");
        QCOMPARE(r.json()[u"content"][0][u"input"].toObject(),
                 QJsonObject({{"location", "weather in Rome?"}}));
    }

    void maxTokensTruncates()
    {
        Reply r =
            post("/v1/chat/completions", chatBody("hello world", {{"max_tokens", 3}}), openAi());
        QCOMPARE(r.json()[u"choices"][0][u"finish_reason"].toString(), "length");
        QCOMPARE(r.json()[u"usage"][u"completion_tokens"].toInt(), 3);
        r = post("/v1/messages", messagesBody("hello world", {{"max_tokens", 2}}), anthropic());
        QCOMPARE(r.json()[u"stop_reason"].toString(), "max_tokens");
        QCOMPARE(r.json()[u"usage"][u"output_tokens"].toInt(), 2);
        r = post("/v1/responses",
                 responsesBody("hello world", {{"max_output_tokens", 2}, {"stream", true}}),
                 openAi());
        const QList<SseEvent> events = parseSse(r.body);
        QCOMPARE(events.last().event, QByteArray("response.incomplete"));
        const QJsonObject response = jsonOf(events.last())[u"response"].toObject();
        QCOMPARE(response[u"status"].toString(), "incomplete");
        QCOMPARE(response[u"incomplete_details"][u"reason"].toString(), "max_output_tokens");
        QCOMPARE(response[u"usage"][u"output_tokens"].toInt(), 2);
    }

    // An upstream that ignores max tokens: every piece comes, reported as output, and the
    // answer ends as a complete one would.
    void ignoreMaxTokens()
    {
        Reply r =
            post("/v1/chat/completions",
                 chatBody("hello world [fake chunks=12 ignore-max-tokens=1]", {{"max_tokens", 3}}),
                 openAi());
        QCOMPARE(r.json()[u"choices"][0][u"finish_reason"].toString(), "stop");
        QCOMPARE(r.json()[u"usage"][u"completion_tokens"].toInt(), 12);
        r = post("/v1/messages", messagesBody("hello world", {{"max_tokens", 2}, {"stream", true}}),
                 anthropic({{"x-fake-ignore-max-tokens", "1"}, {"x-fake-chunks", "7"}}));
        const QList<SseEvent> events = parseSse(r.body);
        QCOMPARE(events.last().event, QByteArray("message_stop"));
        const QJsonObject delta = jsonOf(events[events.size() - 2]);
        QCOMPARE(delta[u"delta"][u"stop_reason"].toString(), "end_turn");
        QCOMPARE(delta[u"usage"][u"output_tokens"].toInt(), 7);
        r = post("/v1/responses", responsesBody("hello world", {{"max_output_tokens", 2}}),
                 openAi({{"x-fake-ignore-max-tokens", "1"}, {"x-fake-chunks", "5"}}));
        QCOMPARE(r.json()[u"status"].toString(), "completed");
        QCOMPARE(r.json()[u"usage"][u"output_tokens"].toInt(), 5);
        // 0 keeps the cut; anything else is refused.
        r = post("/v1/chat/completions",
                 chatBody("hello world [fake chunks=12 ignore-max-tokens=0]", {{"max_tokens", 3}}),
                 openAi());
        QCOMPARE(r.json()[u"usage"][u"completion_tokens"].toInt(), 3);
        r = post("/v1/chat/completions", chatBody("hello world [fake ignore-max-tokens=yes]"),
                 openAi());
        QCOMPARE(r.status, 400);
    }

    void cacheHeaders()
    {
        const Headers cache{{"x-fake-cache-read", "100"}, {"x-fake-cache-write", "20"}};
        Reply r = post("/v1/chat/completions", chatBody("one two"), openAi(cache));
        QCOMPARE(r.json()[u"usage"][u"prompt_tokens"].toInt(), 5 + 100);
        QCOMPARE(r.json()[u"usage"][u"prompt_tokens_details"][u"cached_tokens"].toInt(), 100);
        QCOMPARE(r.json()[u"usage"][u"total_tokens"].toInt(), 105 + 8);
        r = post("/v1/responses", responsesBody("one two"), openAi(cache));
        QCOMPARE(r.json()[u"usage"][u"input_tokens"].toInt(), 105);
        QCOMPARE(r.json()[u"usage"][u"input_tokens_details"][u"cached_tokens"].toInt(), 100);

        r = post("/v1/messages", messagesBody("one two", {{"stream", true}}),
                 anthropic(cache + Headers{{"x-fake-delta-usage", "full"}}));
        const QList<SseEvent> events = parseSse(r.body);
        QCOMPARE(jsonOf(events[0])[u"message"][u"usage"].toObject(),
                 QJsonObject({{"input_tokens", 5},
                              {"cache_creation_input_tokens", 20},
                              {"cache_read_input_tokens", 100},
                              {"output_tokens", 1}}));
        QCOMPARE(jsonOf(events[events.size() - 2])[u"usage"].toObject(),
                 QJsonObject({{"input_tokens", 5},
                              {"cache_creation_input_tokens", 20},
                              {"cache_read_input_tokens", 100},
                              {"output_tokens", 8}}));
    }

    void promptTokenRule()
    {
        // 3 per message plus the words of every content/text string, system included.
        const QJsonArray messages{
            QJsonObject{{"role", "system"}, {"content", "You are terse."}},
            QJsonObject{
                {"role", "user"},
                {"content", QJsonArray{QJsonObject{{"type", "text"}, {"text", "a b"}},
                                       QJsonObject{{"type", "image_url"},
                                                   {"image_url", QJsonObject{{"url", "x y z"}}}}}}},
            QJsonObject{{"role", "assistant"}, {"content", "c"}},
            QJsonObject{{"role", "user"}, {"content", "  d   e  f "}}};
        const Reply r = post("/v1/chat/completions",
                             toJson({{"model", "m"}, {"messages", messages}}), openAi());
        QCOMPARE(r.json()[u"usage"][u"prompt_tokens"].toInt(),
                 (3 + 3) + (3 + 2) + (3 + 1) + (3 + 3));
        QCOMPARE(r.json()[u"choices"][0][u"message"][u"content"].toString(), "Echo:   d   e  f ");
    }

    void modelLists()
    {
        Reply r = get("/v1/models", openAi());
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json()[u"object"].toString(), "list");
        const QJsonObject model = r.json()[u"data"][0].toObject();
        QCOMPARE(model[u"object"].toString(), "model");
        QVERIFY(model[u"id"].isString());
        QVERIFY(model[u"owned_by"].isString());
        QVERIFY(model[u"created"].isDouble());

        r = get("/v1/models", anthropic());
        QCOMPARE(r.json()[u"data"][0][u"type"].toString(), "model");
        QVERIFY(r.json()[u"data"][0][u"display_name"].isString());
        QCOMPARE(r.json()[u"has_more"].toBool(true), false);

        r = get("/api/v1/models"); // public, like OpenRouter's
        QCOMPARE(r.status, 200);
        bool found = false;
        for (const QJsonValue &v : r.json()[u"data"].toArray()) {
            const QJsonObject m = v.toObject();
            QVERIFY(m[u"id"].toString().contains('/'));
            QVERIFY(m[u"name"].isString());
            QVERIFY(m[u"context_length"].isDouble());
            QVERIFY(m[u"pricing"][u"prompt"].isString());
            QVERIFY(m[u"pricing"][u"completion"].isString());
            if (m[u"id"].toString() == "anthropic/claude-fake") {
                found = true;
                QCOMPARE(m[u"pricing"][u"prompt"].toString(), "0.000003");
                QCOMPARE(m[u"pricing"][u"completion"].toString(), "0.000015");
                QCOMPARE(m[u"pricing"][u"input_cache_read"].toString(), "0.0000003");
                QCOMPARE(m[u"pricing"][u"input_cache_write"].toString(), "0.00000375");
            }
        }
        QVERIFY(found);
        // An OpenRouter-style base URL serves the protocols too.
        r = post("/api/v1/chat/completions", chatBody("via catalog"), openAi());
        QCOMPARE(r.json()[u"choices"][0][u"message"][u"content"].toString(), "Echo: via catalog");
    }

    void catalogFile()
    {
        const QString path = m_dir.filePath(QStringLiteral("catalog.json"));
        const QByteArray catalog =
            "{\"data\":[{\"id\":\"acme/rocket-1\",\"name\":\"Acme: "
            "Rocket\",\"context_length\":4096,"
            "\"pricing\":{\"prompt\":\"0.00000123\",\"completion\":\"0.00000456\"}}]}";
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(catalog);
        file.close();
        FakeProcess fake;
        QVERIFY(fake.start({QStringLiteral("--catalog"), path}));
        Client c(fake.port);
        c.send("GET", "/api/v1/models", {});
        QCOMPARE(c.read().body, catalog);
        Client models(fake.port);
        models.send("GET", "/v1/models", openAi());
        QCOMPARE(models.read().json()[u"data"][0][u"id"].toString(), "rocket-1");
    }

    // ------------------------------------------------------------------ images

    void imagesB64Json()
    {
        const QString prompt = QStringLiteral("a red fox in fresh snow");
        const QByteArray body = toJson({{"prompt", prompt},
                                        {"model", "gpt-image-1"},
                                        {"n", 3},
                                        {"size", "256x256"},
                                        {"quality", "high"},
                                        {"response_format", "b64_json"},
                                        {"style", "natural"},
                                        {"user", "user-1"}});
        const qint64 before = QDateTime::currentSecsSinceEpoch();
        const Reply r = post("/v1/images/generations", body, openAi());
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        QVERIFY(r.header("x-request-id").startsWith("req_"));
        const QJsonObject answer = r.json();
        QCOMPARE(answer.keys(), QStringList({"created", "data"}));
        QVERIFY(answer[u"created"].toInteger() >= before);
        QVERIFY(answer[u"created"].toInteger() <= QDateTime::currentSecsSinceEpoch());
        const QJsonArray data = answer[u"data"].toArray();
        QCOMPARE(data.size(), 3);
        for (const QJsonValue &item : data) {
            QCOMPARE(item.toObject().keys(), QStringList({"b64_json", "revised_prompt"}));
            QCOMPARE(item[u"revised_prompt"].toString(), prompt);
        }
        QSet<QByteArray> pictures;
        for (const QByteArray &file : b64Images(answer)) {
            const Png png = readPng(file);
            QVERIFY2(png.error.isEmpty(), qPrintable(png.error));
            QCOMPARE(png.width, 256);
            QCOMPARE(png.height, 256);
            pictures.insert(png.scanlines);
        }
        QCOMPARE(pictures.size(), 3); // each image of a request is another picture

        // The same request, the same files; the request is logged like the others.
        const Reply again = post("/v1/images/generations", body, openAi());
        QCOMPARE(again.json().value("data"), answer.value("data"));
        QFile log(m_logPath);
        QVERIFY(log.open(QIODevice::ReadOnly));
        const QJsonObject line =
            QJsonDocument::fromJson(log.readAll().trimmed().split('\n').last()).object();
        QCOMPARE(line[u"path"].toString(), "/v1/images/generations");
        QCOMPARE(line[u"body"].toString().toUtf8(), body);
        QCOMPARE(line[u"headers"][u"authorization"].toString(), "Bearer ***wxyz");
    }

    void imagesSizes_data()
    {
        QTest::addColumn<QJsonValue>("size");
        QTest::addColumn<int>("width");
        QTest::addColumn<int>("height");
        QTest::newRow("default") << QJsonValue() << 1024 << 1024;
        QTest::newRow("null") << QJsonValue(QJsonValue::Null) << 1024 << 1024;
        QTest::newRow("auto") << QJsonValue("auto") << 1024 << 1024;
        QTest::newRow("512x512") << QJsonValue("512x512") << 512 << 512;
        QTest::newRow("1792x1024") << QJsonValue("1792x1024") << 1792 << 1024;
        QTest::newRow("1024x1792") << QJsonValue("1024x1792") << 1024 << 1792;
        QTest::newRow("1536x1024") << QJsonValue("1536x1024") << 1536 << 1024;
        QTest::newRow("1024x1536") << QJsonValue("1024x1536") << 1024 << 1536;
    }

    void imagesSizes()
    {
        QFETCH(QJsonValue, size);
        QFETCH(int, width);
        QFETCH(int, height);
        // Null optional fields count as absent.
        QJsonObject body{{"prompt", "a harbour at dawn"},
                         {"n", QJsonValue::Null},
                         {"model", QJsonValue::Null},
                         {"response_format", "b64_json"}};
        if (!size.isUndefined())
            body.insert("size", size);
        QElapsedTimer timer;
        timer.start();
        const Reply r = post("/v1/images/generations", toJson(body), openAi());
        QCOMPARE(r.status, 200);
        const QList<QByteArray> files = b64Images(r.json());
        QCOMPARE(files.size(), 1);
        const Png png = readPng(files.first());
        QVERIFY2(png.error.isEmpty(), qPrintable(png.error));
        QCOMPARE(png.width, width);
        QCOMPARE(png.height, height);
        QVERIFY2(files.first().size() < 200 * 1024,
                 QByteArray::number(files.first().size()).constData());
        QVERIFY2(timer.elapsed() < 2000, QByteArray::number(timer.elapsed()).constData());
    }

    void imagesUrl()
    {
        m_fake.resetStats();
        // The default response_format is url; /api/v1 is /v1 as for the other endpoints.
        const Reply r =
            post("/api/v1/images/generations",
                 toJson({{"prompt", "a lighthouse"}, {"n", 2}, {"size", "512x512"}}), openAi());
        QCOMPARE(r.status, 200);
        const QJsonArray data = r.json()[u"data"].toArray();
        QCOMPARE(data.size(), 2);
        const QByteArray origin = "http://127.0.0.1:" + QByteArray::number(m_fake.port);
        QSet<QByteArray> pictures;
        for (const QJsonValue &item : data) {
            QCOMPARE(item.toObject().keys(), QStringList({"revised_prompt", "url"}));
            QCOMPARE(item[u"revised_prompt"].toString(), "a lighthouse");
            const QByteArray url = item[u"url"].toString().toUtf8();
            QVERIFY2(url.startsWith(origin + "/fake/images/") && url.endsWith(".png"),
                     url.constData());
            const Reply file = get(url.mid(origin.size()));
            QCOMPARE(file.status, 200);
            QCOMPARE(file.header("content-type"), QByteArray("image/png"));
            const Png png = readPng(file.body);
            QVERIFY2(png.error.isEmpty(), qPrintable(png.error));
            QCOMPARE(png.width, 512);
            QCOMPARE(png.height, 512);
            pictures.insert(png.scanlines);
        }
        QCOMPARE(pictures.size(), 2);
        // The same picture as b64_json.
        const Reply inlined = post(
            "/v1/images/generations",
            toJson(
                {{"prompt", "a lighthouse"}, {"size", "512x512"}, {"response_format", "b64_json"}}),
            openAi());
        QCOMPARE(
            readPng(b64Images(inlined.json()).value(0)).scanlines,
            readPng(get(data[0][u"url"].toString().toUtf8().mid(origin.size())).body).scanlines);

        Reply missing = get("/fake/images/img-nothing-0.png");
        QCOMPARE(missing.status, 404);
        QCOMPARE(missing.json()[u"error"][u"type"].toString(), "invalid_request_error");
        missing = get(data[0][u"url"].toString().toUtf8().mid(origin.size()).chopped(4));
        QCOMPARE(missing.status, 404);

        // Fetches are counted apart from the requests.
        const QJsonObject stats = m_fake.stats();
        QCOMPARE(stats[u"requests"].toInt(), 2);
        QCOMPARE(stats[u"image_fetches"].toInt(), 3);
        QCOMPARE(stats[u"by_path"][u"/api/v1/images/generations"].toInt(), 1);
        QCOMPARE(stats[u"by_path"][u"/v1/images/generations"].toInt(), 1);
    }

    void imagesEviction()
    {
        // The fake keeps the last 256 images of url answers.
        FakeProcess fake;
        QVERIFY(fake.start());
        auto generate = [&](int n) {
            Client c(fake.port);
            c.send("POST", "/v1/images/generations", openAi(),
                   toJson({{"prompt", "kept"}, {"n", n}, {"size", "256x256"}}));
            QList<QByteArray> paths;
            for (const QJsonValue &item : c.read().json()[u"data"].toArray())
                paths << QUrl(item[u"url"].toString()).path().toUtf8();
            return paths;
        };
        auto status = [&](const QByteArray &path) {
            Client c(fake.port);
            c.send("GET", path, {});
            return c.read().status;
        };
        const QList<QByteArray> first = generate(1);
        QCOMPARE(first.size(), 1);
        QList<QByteArray> later;
        for (int i = 0; i < 25; ++i)
            later += generate(10);
        QCOMPARE(later.size(), 250);
        QCOMPARE(status(first.first()), 200); // 251 stored
        later += generate(5);
        QCOMPARE(status(first.first()), 200); // 256 stored, the first among them
        later += generate(1);
        QCOMPARE(status(first.first()), 404);
        QCOMPARE(status(later.first()), 200);
        QCOMPARE(status(later.last()), 200);
    }

    void imagesValidation_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("param"); // empty: null
        QTest::addColumn<QString>("code");  // empty: null
        QTest::addColumn<QString>("message");
        QTest::newRow("prompt missing") << toJson({{"n", 1}}) << "prompt"
                                        << "missing_required_parameter"
                                        << "Missing required parameter: 'prompt'.";
        QTest::newRow("prompt number")
            << toJson({{"prompt", 5}}) << "prompt"
            << "invalid_type"
            << "Invalid type for 'prompt': expected a string, but got an integer instead.";
        QTest::newRow("prompt null")
            << toJson({{"prompt", QJsonValue::Null}}) << "prompt"
            << "invalid_type"
            << "Invalid type for 'prompt': expected a string, but got null instead.";
        QTest::newRow("prompt empty")
            << toJson({{"prompt", ""}}) << "prompt"
            << "empty_string"
            << "Invalid 'prompt': empty string. Expected a string with minimum length 1, but "
               "got an empty string instead.";
        QTest::newRow("prompt too long")
            << toJson({{"prompt", QString(32001, QLatin1Char('a'))}}) << "prompt"
            << "string_above_max_length"
            << "Invalid 'prompt': string too long. Expected a string with maximum length 32000, "
               "but got a string with length 32001 instead.";
        QTest::newRow("model number")
            << toJson({{"prompt", "x"}, {"model", 3}}) << "model"
            << "invalid_type"
            << "Invalid type for 'model': expected a string, but got an integer instead.";
        QTest::newRow("n zero") << toJson({{"prompt", "x"}, {"n", 0}}) << "n"
                                << "integer_below_min_value"
                                << "Invalid 'n': integer below minimum value. Expected a value "
                                   ">= 1, but got 0 instead.";
        QTest::newRow("n eleven") << toJson({{"prompt", "x"}, {"n", 11}}) << "n"
                                  << "integer_above_max_value"
                                  << "Invalid 'n': integer above maximum value. Expected a value "
                                     "<= 10, but got 11 instead.";
        QTest::newRow("n string")
            << toJson({{"prompt", "x"}, {"n", "2"}}) << "n"
            << "invalid_type"
            << "Invalid type for 'n': expected an integer, but got a string instead.";
        QTest::newRow("n decimal")
            << toJson({{"prompt", "x"}, {"n", 1.5}}) << "n"
            << "invalid_type"
            << "Invalid type for 'n': expected an integer, but got a decimal number instead.";
        QTest::newRow("size") << toJson({{"prompt", "x"}, {"size", "1000x1000"}}) << "size"
                              << "invalid_value"
                              << "Invalid value: '1000x1000'. Supported values are: '256x256', "
                                 "'512x512', '1024x1024', '1536x1024', '1024x1536', "
                                 "'1792x1024', '1024x1792', and 'auto'.";
        QTest::newRow("size number")
            << toJson({{"prompt", "x"}, {"size", 1024}}) << "size"
            << "invalid_type"
            << "Invalid type for 'size': expected a string, but got an integer instead.";
        QTest::newRow("quality") << toJson({{"prompt", "x"}, {"quality", "ultra"}}) << "quality"
                                 << "invalid_value"
                                 << "Invalid value: 'ultra'. Supported values are: 'standard', "
                                    "'hd', 'low', 'medium', 'high', and 'auto'.";
        QTest::newRow("response_format")
            << toJson({{"prompt", "x"}, {"response_format", "png"}}) << "response_format"
            << "invalid_value"
            << "Invalid value: 'png'. Supported values are: 'url' and 'b64_json'.";
        QTest::newRow("style") << toJson({{"prompt", "x"}, {"style", "bold"}}) << "style"
                               << "invalid_value"
                               << "Invalid value: 'bold'. Supported values are: 'vivid' and "
                                  "'natural'.";
        QTest::newRow("user") << toJson({{"prompt", "x"}, {"user", true}}) << "user"
                              << "invalid_type"
                              << "Invalid type for 'user': expected a string, but got a "
                                 "boolean instead.";
        QTest::newRow("unknown field") << toJson({{"prompt", "x"}, {"negative_prompt", "y"}}) << ""
                                       << ""
                                       << "Unrecognized request argument supplied: negative_prompt";
        QTest::newRow("not json") << QByteArray("{oops") << ""
                                  << ""
                                  << "We could not parse the JSON body of your request";
        QTest::newRow("not an object") << QByteArray("[]") << ""
                                       << ""
                                       << "We could not parse the JSON body of your request";
    }

    void imagesValidation() { checkInvalidRequest("/v1/images/generations"); }

    // The Bearer-key endpoints added after the generation ones: 401 without a key or with one
    // --require-key does not list (masked in the message), 405 for GET.
    void bearerAuth_data()
    {
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<QByteArray>("body");
        QTest::newRow("images") << QByteArray("/v1/images/generations")
                                << toJson({{"prompt", "x"}, {"size", "256x256"}});
        QTest::newRow("decisions") << QByteArray("/api/v1/decisions") << decisionBody("s");
        QTest::newRow("decisions /v1") << QByteArray("/v1/decisions") << decisionBody("s");
    }

    void bearerAuth()
    {
        QFETCH(QByteArray, path);
        QFETCH(QByteArray, body);
        const Headers json{{"content-type", "application/json"}};
        Reply r = post(path, body, json);
        QCOMPARE(r.status, 401);
        QCOMPARE(r.json()[u"error"][u"type"].toString(), "invalid_request_error");
        QVERIFY(r.json()[u"error"][u"message"].toString().contains("API key"));
        r = get(path, openAi());
        QCOMPARE(r.status, 405);

        FakeProcess fake;
        QVERIFY(fake.start({QStringLiteral("--require-key"), QStringLiteral("sk-bearer-0001")}));
        auto call = [&](const QByteArray &key) {
            Client c(fake.port);
            c.send("POST", path, json + Headers{{"authorization", "Bearer " + key}}, body);
            return c.read();
        };
        r = call("sk-wrong-99998888");
        QCOMPARE(r.status, 401);
        QCOMPARE(r.json()[u"error"][u"code"].toString(), "invalid_api_key");
        QVERIFY(!r.body.contains("sk-wrong-99998888"));
        QCOMPARE(call("sk-bearer-0001").status, 200);
    }

    void imagesFaults_data()
    {
        QTest::addColumn<QString>("prompt");
        addFaultColumns();
        QTest::newRow("429 directive")
            << "a cat [fake fault=429]" << QByteArray() << 429 << "requests" << QByteArray("2");
        QTest::newRow("429:9 directive")
            << "a cat [fake fault=429:9]" << QByteArray() << 429 << "requests" << QByteArray("9");
        QTest::newRow("500 header")
            << "a cat" << QByteArray("500") << 500 << "server_error" << QByteArray();
        QTest::newRow("503 directive")
            << "a cat [fake fault=503]" << QByteArray() << 503 << "server_error" << QByteArray();
        QTest::newRow("header over directive")
            << "a cat [fake fault=500]" << QByteArray("none") << 200 << QString() << QByteArray();
    }

    void imagesFaults()
    {
        QFETCH(QString, prompt);
        Reply r;
        checkFaultRow("/v1/images/generations", toJson({{"prompt", prompt}, {"size", "256x256"}}),
                      &r);
        if (r.status == 200)
            QCOMPARE(r.json()[u"data"].toArray().size(), 1);
    }

    void imagesPartial()
    {
        // images=K answers K of the n asked; headers win over the directive.
        const QString prompt = QStringLiteral("a tree [fake images=2]");
        QJsonObject body{
            {"prompt", prompt}, {"n", 4}, {"size", "256x256"}, {"response_format", "b64_json"}};
        Reply r = post("/v1/images/generations", toJson(body), openAi());
        QCOMPARE(r.status, 200);
        const QList<QByteArray> partial = b64Images(r.json());
        QCOMPARE(partial.size(), 2);
        r = post("/v1/images/generations", toJson(body), openAi({{"x-fake-images", "9"}}));
        const QList<QByteArray> whole = b64Images(r.json());
        QCOMPARE(whole.size(), 4);
        QCOMPARE(whole.mid(0, 2), partial); // the first K of the same request
        for (const QByteArray &file : whole)
            QVERIFY(readPng(file).error.isEmpty());

        r = post("/v1/images/generations", toJson(body), openAi({{"x-fake-images", "0"}}));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("data"), QJsonValue(QJsonArray()));
        body.insert("response_format", "url");
        r = post("/v1/images/generations", toJson(body), openAi({{"x-fake-images", "1"}}));
        QCOMPARE(r.json()[u"data"].toArray().size(), 1);
        QVERIFY(r.json()[u"data"][0][u"url"].toString().endsWith("-0.png"));

        r = post("/v1/images/generations", toJson(body), openAi({{"x-fake-images", "11"}}));
        QCOMPARE(r.status, 400);
        QVERIFY(r.json()[u"error"][u"message"].toString().contains("images"));
        r = post("/v1/images/generations", toJson({{"prompt", "x [fake images=-1]"}}), openAi());
        QCOMPARE(r.status, 400);
    }

    void imagesDelay()
    {
        const QByteArray body = toJson({{"prompt", "slow"}, {"size", "256x256"}});
        QElapsedTimer timer;
        timer.start();
        Reply r = post("/v1/images/generations", body, openAi({{"x-fake-delay-ms", "300"}}));
        QCOMPARE(r.status, 200);
        QVERIFY2(timer.elapsed() >= 290, QByteArray::number(timer.elapsed()).constData());

        // A slow first byte from the directive: nothing for a while, then the answer.
        timer.restart();
        Client slow(m_fake.port);
        slow.send(
            "POST", "/v1/images/generations", openAi(),
            toJson({{"prompt", "slow [fake fault=slow-first-byte:600]"}, {"size", "256x256"}}));
        QVERIFY(!slow.socket().waitForReadyRead(300));
        r = slow.read(5000);
        QCOMPARE(r.status, 200);
        QVERIFY2(timer.elapsed() >= 590, QByteArray::number(timer.elapsed()).constData());
        QCOMPARE(r.json()[u"data"].toArray().size(), 1);

        // A hang: a client's timeout is all that ends it.
        m_fake.resetStats();
        auto hung = std::make_unique<Client>(m_fake.port);
        hung->send("POST", "/v1/images/generations", openAi({{"x-fake-fault", "hang"}}), body);
        r = hung->read(300);
        QCOMPARE(r.status, 0);
        QVERIFY(!r.closed);
        QCOMPARE(m_fake.stats()[u"open_requests"].toInt(), 1);
        hung.reset();
        QTRY_COMPARE_WITH_TIMEOUT(m_fake.stats()[u"cancelled"].toInt(), 1, 5000);
    }

    // ------------------------------------------------------------------ decisions

    void decisionsShapes()
    {
        const Reply r =
            post("/api/v1/decisions", decisionBody("The invoice was charged twice."), openAi());
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("content-type"), "application/json");
        const QJsonObject answer = r.json();
        QCOMPARE(answer.keys(), QStringList({"answers", "id", "model", "object", "usage"}));
        QVERIFY2(QRegularExpression(QStringLiteral("^dec-[0-9a-f]{16}$"))
                     .match(answer[u"id"].toString())
                     .hasMatch(),
                 qPrintable(answer[u"id"].toString()));
        QCOMPARE(answer[u"object"].toString(), "decision");
        QCOMPARE(answer[u"model"].toString(), "fakeai/echo-small@2026-01");
        const QJsonObject answers = answer[u"answers"].toObject();
        QCOMPARE(answers.keys(), QStringList({"holds", "pick", "rate"}));

        const QJsonObject noul = answers[u"holds"].toObject();
        QCOMPARE(noul.keys(), QStringList({"probability", "type"}));
        QCOMPARE(noul[u"type"].toString(), "noul");
        QVERIFY(probabilityUnits(noul[u"probability"]) >= 0);

        const QJsonObject choice = answers[u"pick"].toObject();
        QCOMPARE(choice.keys(), QStringList({"choice", "confidence", "probabilities", "type"}));
        QCOMPARE(choice[u"type"].toString(), "choice");
        const QJsonObject options = choice[u"probabilities"].toObject();
        QCOMPARE(options.keys(), QStringList({"billing", "sales", "support"}));
        qint64 sum = 0;
        qint64 best = -1;
        for (const QJsonValue &p : options) {
            const qint64 units = probabilityUnits(p);
            QVERIFY(units >= 0);
            sum += units;
            best = qMax(best, units);
        }
        QCOMPARE(sum, 10000);
        QVERIFY(options.contains(choice[u"choice"].toString()));
        QCOMPARE(probabilityUnits(options[choice[u"choice"].toString()]), best);
        QCOMPARE(probabilityUnits(choice[u"confidence"]), best);

        const QJsonObject score = answers[u"rate"].toObject();
        QCOMPARE(score.keys(),
                 QStringList({"confidence", "legend", "probabilities", "score", "type"}));
        QCOMPARE(score[u"type"].toString(), "score");
        QCOMPARE(score[u"legend"].toArray(), QJsonArray({"none", "low", "high", "critical"}));
        const QJsonArray levels = score[u"probabilities"].toArray();
        QCOMPARE(levels.size(), 4);
        sum = 0;
        best = -1;
        qint64 weighted = 0;
        for (qsizetype i = 0; i < levels.size(); ++i) {
            const qint64 units = probabilityUnits(levels[i]);
            QVERIFY(units >= 0);
            sum += units;
            weighted += i * units;
            best = qMax(best, units);
        }
        QCOMPARE(sum, 10000);
        QCOMPARE(qRound64(score[u"score"].toDouble() * 10000), weighted);
        QVERIFY(score[u"score"].toDouble() >= 0 && score[u"score"].toDouble() <= 3);
        QCOMPARE(probabilityUnits(score[u"confidence"]), best);
        // The numbers are written exactly: at most four decimals, no exponent.
        static const QRegularExpression number(
            QStringLiteral("\"(probability|confidence|score)\":([0-9]|[0-9]\\.[0-9]{1,4})[,}]"));
        int exact = 0;
        for (auto it = number.globalMatch(QString::fromUtf8(r.body)); it.hasNext(); it.next())
            ++exact;
        QCOMPARE(exact, 4);
    }

    void decisionsDeterministic()
    {
        const QJsonObject state{{"ticket", 42}, {"text", "refund please"}};
        const Reply first = post("/api/v1/decisions", decisionBody(state), openAi());
        const Reply again = post("/v1/decisions", decisionBody(state), openAi());
        QCOMPARE(first.status, 200);
        QCOMPARE(again.status, 200);
        QCOMPARE(again.json()[u"answers"], first.json()[u"answers"]);
        QVERIFY(again.json()[u"id"] != first.json()[u"id"]); // ids follow the request number

        // Another state, other answers; the same state as a string of its JSON, the same ones.
        const Reply other =
            post("/api/v1/decisions", decisionBody(QJsonObject{{"ticket", 43}}), openAi());
        QVERIFY(other.json()[u"answers"] != first.json()[u"answers"]);
        const Reply text =
            post("/api/v1/decisions", decisionBody(QString::fromUtf8(toJson(state))), openAi());
        QCOMPARE(text.json()[u"answers"], first.json()[u"answers"]);

        // The question id is part of the hash: the same question under another id differs.
        QJsonObject renamed = decisionQuestions();
        renamed.insert("holds2", renamed.value("holds"));
        const QJsonObject answers =
            post("/api/v1/decisions", decisionBody(state, renamed), openAi())
                .json()[u"answers"]
                .toObject();
        QCOMPARE(answers[u"holds"], first.json()[u"answers"][u"holds"]);
        QVERIFY(answers[u"holds2"] != answers[u"holds"]);
    }

    void decisionsUsage()
    {
        auto expectedCost = [](qint64 millionths) {
            return QByteArray::number(double(millionths) / 1e6, 'f', 6);
        };
        // Default: input = ceil(body bytes / 4), output = 12 per question, cost from both.
        QByteArray body = decisionBody("count me");
        Reply r = post("/api/v1/decisions", body, openAi());
        QCOMPARE(r.status, 200);
        QJsonObject usage = r.json()[u"usage"].toObject();
        const qint64 input = (body.size() + 3) / 4;
        QCOMPARE(usage.keys(), QStringList({"cost", "input_tokens", "output_tokens"}));
        QCOMPARE(usage[u"input_tokens"].toInteger(), input);
        QCOMPARE(usage[u"output_tokens"].toInteger(), 36);
        QByteArray cost = expectedCost(input + 4 * 36);
        while (cost.endsWith('0'))
            cost.chop(1);
        QVERIFY2(r.body.endsWith(",\"cost\":" + cost + "}}"), r.body.right(80).constData());

        // One question, a body of 4k+1 bytes rounds up.
        QJsonObject one{{"q", QJsonObject{{"type", "noul"}, {"instructions", "?"}}}};
        QString state = QStringLiteral("x");
        while (decisionBody(state, one).size() % 4 != 1)
            state += QLatin1Char('x');
        body = decisionBody(state, one);
        usage = post("/api/v1/decisions", body, openAi()).json()[u"usage"].toObject();
        QCOMPARE(usage[u"input_tokens"].toInteger(), (body.size() + 3) / 4);
        QCOMPARE(usage[u"output_tokens"].toInteger(), 12);

        // cost=none leaves it out; cost=D is written as given; the header wins.
        r = post("/api/v1/decisions", decisionBody("free [fake cost=none]"), openAi());
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json()[u"usage"].toObject().keys(),
                 QStringList({"input_tokens", "output_tokens"}));
        r = post("/api/v1/decisions", decisionBody("priced [fake cost=0.000123456789]"), openAi());
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.endsWith(",\"cost\":0.000123456789}}"), r.body.right(80).constData());
        r = post("/api/v1/decisions", decisionBody(QJsonObject{{"note", "[fake cost=none]"}}),
                 openAi({{"x-fake-cost", "2.5"}}));
        QVERIFY2(r.body.endsWith(",\"cost\":2.5}}"), r.body.right(80).constData());
        QCOMPARE(r.json()[u"usage"][u"cost"].toDouble(), 2.5);

        for (const QByteArray &bad : {QByteArray("abc"), QByteArray("1e-6"), QByteArray("-1"),
                                      QByteArray(".5"), QByteArray("01")}) {
            r = post("/api/v1/decisions", decisionBody("x"), openAi({{"x-fake-cost", bad}}));
            QCOMPARE(r.status, 400);
            QVERIFY2(
                r.json()[u"error"][u"message"].toString().contains(QLatin1String("cost=" + bad)),
                r.body.constData());
        }
    }

    void decisionsValidation_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("param"); // empty: null
        QTest::addColumn<QString>("code");  // empty: null
        QTest::addColumn<QString>("message");
        const QJsonObject questions = decisionQuestions();
        auto with = [&](const QString &id, const QJsonObject &question) {
            QJsonObject q = questions;
            q.insert(id, question);
            return toJson({{"model", "m"}, {"state", "s"}, {"questions", q}});
        };
        QTest::newRow("model missing")
            << toJson({{"state", "s"}, {"questions", questions}}) << "model"
            << "missing_required_parameter"
            << "Missing required parameter: 'model'.";
        QTest::newRow("model number")
            << toJson({{"model", 1}, {"state", "s"}, {"questions", questions}}) << "model"
            << "invalid_type"
            << "Invalid type for 'model': expected a string, but got an integer instead.";
        QTest::newRow("model empty")
            << toJson({{"model", ""}, {"state", "s"}, {"questions", questions}}) << "model"
            << "empty_string"
            << "Invalid 'model': empty string.";
        QTest::newRow("state missing")
            << toJson({{"model", "m"}, {"questions", questions}}) << "state"
            << "missing_required_parameter"
            << "Missing required parameter: 'state'.";
        QTest::newRow("state number")
            << toJson({{"model", "m"}, {"state", 2.5}, {"questions", questions}}) << "state"
            << "invalid_type"
            << "Invalid type for 'state': expected a string, an object or an array, but got a "
               "decimal number instead.";
        QTest::newRow("state null")
            << toJson({{"model", "m"}, {"state", QJsonValue::Null}, {"questions", questions}})
            << "state"
            << "invalid_type"
            << "Invalid type for 'state': expected a string, an object or an array, but got "
               "null instead.";
        QTest::newRow("questions missing")
            << toJson({{"model", "m"}, {"state", "s"}}) << "questions"
            << "missing_required_parameter"
            << "Missing required parameter: 'questions'.";
        QTest::newRow("questions array")
            << toJson({{"model", "m"}, {"state", "s"}, {"questions", QJsonArray{}}}) << "questions"
            << "invalid_type"
            << "Invalid type for 'questions': expected an object, but got an array instead.";
        QTest::newRow("questions empty")
            << toJson({{"model", "m"}, {"state", "s"}, {"questions", QJsonObject{}}}) << "questions"
            << "empty_object"
            << "Invalid 'questions': empty object.";
        QTest::newRow("question string")
            << toJson({{"model", "m"}, {"state", "s"}, {"questions", QJsonObject{{"q", "?"}}}})
            << "questions.q"
            << "invalid_type"
            << "Invalid type for 'questions.q': expected an object, but got a string instead.";
        QTest::newRow("type missing") << with("q", {{"instructions", "?"}}) << "questions.q.type"
                                      << "missing_required_parameter"
                                      << "Missing required parameter: 'questions.q.type'.";
        QTest::newRow("type unknown")
            << with("q", {{"type", "yesno"}, {"instructions", "?"}}) << "questions.q.type"
            << "invalid_value"
            << "Invalid value: 'yesno'. Supported values are: 'noul', 'choice', and 'score'.";
        QTest::newRow("instructions missing")
            << with("q", {{"type", "noul"}}) << "questions.q.instructions"
            << "missing_required_parameter"
            << "Missing required parameter: 'questions.q.instructions'.";
        QTest::newRow("instructions number")
            << with("q", {{"type", "noul"}, {"instructions", 3}}) << "questions.q.instructions"
            << "invalid_type"
            << "Invalid type for 'questions.q.instructions': expected a string, but got an "
               "integer instead.";
        QTest::newRow("choice without criteria")
            << with("q", {{"type", "choice"}, {"instructions", "?"}}) << "questions.q.criteria"
            << "missing_required_parameter"
            << "Missing required parameter: 'questions.q.criteria'.";
        QTest::newRow("score criteria object")
            << with("q", {{"type", "score"}, {"instructions", "?"}, {"criteria", QJsonObject{}}})
            << "questions.q.criteria"
            << "invalid_type"
            << "Invalid type for 'questions.q.criteria': expected an array of strings, but got "
               "an object instead.";
        QTest::newRow("choice criteria array")
            << with("q",
                    {{"type", "choice"}, {"instructions", "?"}, {"criteria", QJsonArray{"a", "b"}}})
            << "questions.q.criteria"
            << "invalid_type"
            << "Invalid type for 'questions.q.criteria': expected an object of option "
               "descriptions, but got an array instead.";
        QTest::newRow("choice one option")
            << with("q", {{"type", "choice"},
                          {"instructions", "?"},
                          {"criteria", QJsonObject{{"only", "x"}}}})
            << "questions.q.criteria"
            << "invalid_value"
            << "Invalid 'questions.q.criteria': expected at least 2 options, but got 1 instead.";
        QTest::newRow("choice option number")
            << with("q", {{"type", "choice"},
                          {"instructions", "?"},
                          {"criteria", QJsonObject{{"a", "x"}, {"b", 2}}}})
            << "questions.q.criteria.b"
            << "invalid_type"
            << "Invalid type for 'questions.q.criteria.b': expected a string or null";
        QTest::newRow("criteria too short")
            << with("q",
                    {{"type", "score"}, {"instructions", "?"}, {"criteria", QJsonArray{"only"}}})
            << "questions.q.criteria"
            << "array_below_min_length"
            << "Invalid 'questions.q.criteria': array too short.";
        QTest::newRow("criteria item number")
            << with("q",
                    {{"type", "score"}, {"instructions", "?"}, {"criteria", QJsonArray{"a", 2}}})
            << "questions.q.criteria[1]"
            << "invalid_type"
            << "Invalid type for 'questions.q.criteria[1]': expected a string";
        QTest::newRow("criteria duplicate")
            << with("q",
                    {{"type", "score"}, {"instructions", "?"}, {"criteria", QJsonArray{"a", "a"}}})
            << "questions.q.criteria[1]"
            << "invalid_value"
            << "Invalid 'questions.q.criteria[1]': duplicate value 'a'.";
        QTest::newRow("not json") << QByteArray("{oops") << ""
                                  << ""
                                  << "We could not parse the JSON body of your request";
    }

    void decisionsValidation() { checkInvalidRequest("/api/v1/decisions"); }

    void decisionsFaults_data()
    {
        QTest::addColumn<QJsonValue>("state");
        addFaultColumns();
        QTest::newRow("429 directive") << QJsonValue("s [fake fault=429]") << QByteArray() << 429
                                       << "requests" << QByteArray("2");
        QTest::newRow("429:7 in an object state")
            << QJsonValue(QJsonObject{{"note", "[fake fault=429:7]"}}) << QByteArray() << 429
            << "requests" << QByteArray("7");
        QTest::newRow("500 header")
            << QJsonValue("s") << QByteArray("500") << 500 << "server_error" << QByteArray();
        QTest::newRow("503 in an array state")
            << QJsonValue(QJsonArray{"a", "[fake fault=503]"}) << QByteArray() << 503
            << "server_error" << QByteArray();
        QTest::newRow("header over directive")
            << QJsonValue("s [fake fault=500]") << QByteArray("none") << 200 << "" << QByteArray();
    }

    void decisionsFaults()
    {
        QFETCH(QJsonValue, state);
        Reply r;
        checkFaultRow("/api/v1/decisions", decisionBody(state), &r);
        if (r.status == 200)
            QCOMPARE(r.json()[u"answers"].toObject().size(), 3);
    }

    void decisionsDelayAndHang()
    {
        QElapsedTimer timer;
        timer.start();
        Reply r = post("/api/v1/decisions", decisionBody("slow [fake delay-ms=300]"), openAi());
        QCOMPARE(r.status, 200);
        QVERIFY2(timer.elapsed() >= 290, QByteArray::number(timer.elapsed()).constData());
        timer.restart();
        r = post("/api/v1/decisions", decisionBody("s"), openAi({{"x-fake-delay-ms", "250"}}));
        QCOMPARE(r.status, 200);
        QVERIFY2(timer.elapsed() >= 240, QByteArray::number(timer.elapsed()).constData());

        m_fake.resetStats();
        auto hung = std::make_unique<Client>(m_fake.port);
        hung->send("POST", "/api/v1/decisions", openAi(), decisionBody("s [fake fault=hang]"));
        r = hung->read(300);
        QCOMPARE(r.status, 0);
        QVERIFY(!r.closed);
        QCOMPARE(m_fake.stats()[u"open_requests"].toInt(), 1);
        hung.reset();
        QTRY_COMPARE_WITH_TIMEOUT(m_fake.stats()[u"cancelled"].toInt(), 1, 5000);
    }

    void decisionsStatsAndLog()
    {
        m_fake.resetStats();
        const QByteArray body = decisionBody("logged");
        QCOMPARE(post("/api/v1/decisions", body, openAi()).status, 200);
        QCOMPARE(post("/v1/decisions", body, openAi()).status, 200);
        const QJsonObject stats = m_fake.stats();
        QCOMPARE(stats[u"requests"].toInt(), 2);
        QCOMPARE(stats[u"completed"].toInt(), 2);
        QCOMPARE(stats[u"by_path"][u"/api/v1/decisions"].toInt(), 1);
        QCOMPARE(stats[u"by_path"][u"/v1/decisions"].toInt(), 1);

        QFile log(m_logPath);
        QVERIFY(log.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = log.readAll().trimmed().split('\n');
        QVERIFY(lines.size() >= 2);
        const QJsonObject first = QJsonDocument::fromJson(lines[lines.size() - 2]).object();
        const QJsonObject last = QJsonDocument::fromJson(lines.last()).object();
        QCOMPARE(first[u"path"].toString(), "/api/v1/decisions");
        QCOMPARE(last[u"path"].toString(), "/v1/decisions");
        QCOMPARE(last[u"body"].toString().toUtf8(), body);
        QCOMPARE(last[u"headers"][u"authorization"].toString(), "Bearer ***wxyz");
    }

    // ------------------------------------------------------------------ social-media data

    void socialDocument()
    {
        REQUIRE_SOCIAL();
        const QByteArray document = readFile(QStringLiteral(SOCIAL_OPENAPI));
        // Public, byte for byte.
        Reply r = social("GET", "/openapi.json", {});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        QCOMPARE(r.body.size(), document.size());
        QVERIFY(r.body == document);
        r = social("POST", "/openapi.json", {}, "{}");
        QCOMPARE(r.status, 405);
        QCOMPARE(r.body, QByteArray("{\"detail\":\"Method Not Allowed\"}"));
        QCOMPARE(r.header("allow"), QByteArray("GET"));
        // Without the flag, nothing of it.
        QCOMPARE(get("/openapi.json").status, 404);
        QCOMPARE(get(kVideoAction + "?aweme_id=1", openAi()).status, 404);
        // Not a document: the fake does not start.
        QProcess p;
        p.start(QStringLiteral(FAKE_UPSTREAM_PATH),
                {QStringLiteral("--social-openapi"), m_dir.filePath(QStringLiteral("none.json"))});
        QVERIFY(p.waitForFinished(5000));
        QCOMPARE(p.exitCode(), 1);
        QVERIFY(p.readAllStandardOutput().isEmpty());
    }

    void socialEnvelope()
    {
        REQUIRE_SOCIAL();
        // Repeats, '+', %2B, UTF-8 escapes, empty values, a malformed escape, invalid UTF-8.
        const QByteArray query =
            "aweme_id=7%2B1&z=1&a=2&z=3&kw=%E4%B8%AD%E6%96%87+x&empty=&flag&&bad=%zz%E4";
        const Reply r =
            social("GET", kVideoAction + "?" + query, tikhub({{"X-API-Key", "xk-side-key"}}));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        QVERIFY(!r.chunked);
        QVERIFY(r.body.startsWith("{\"code\":200,"));
        QVERIFY(r.body.contains("\"router\":\"/api/v1/douyin/app/v3/fetch_one_video\","));
        // params: each name once, where it first appears, with its last value.
        QVERIFY2(r.body.contains(
                     "\"params\":{\"aweme_id\":\"7+1\",\"z\":\"3\",\"a\":\"2\",\"kw\":\"中文 x\","
                     "\"empty\":\"\",\"flag\":\"\",\"bad\":\"%zz"),
                 r.body.constData());
        const QJsonObject o = r.json();
        QCOMPARE(o[u"params"][u"bad"].toString(), QStringLiteral("%zz\ufffd"));
        QCOMPARE(o[u"message"].toString(), "Request successful. This request will incur a charge.");
        QVERIFY(QRegularExpression(QStringLiteral("^00000000-0000-4000-8000-[0-9a-f]{12}$"))
                    .match(o[u"request_id"].toString())
                    .hasMatch());
        QVERIFY(QRegularExpression(QStringLiteral("^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d$"))
                    .match(o[u"time"].toString())
                    .hasMatch());
        QVERIFY(qAbs(o[u"time_stamp"].toInteger() - QDateTime::currentSecsSinceEpoch()) < 60);
        QVERIFY(o[u"docs"].toString().startsWith("https://api.tikhub.io/#/Douyin-App-V3-API/"));

        const QJsonObject data = o[u"data"].toObject();
        const QJsonObject echo = data[u"echo"].toObject();
        QCOMPARE(echo.keys(), QStringList({"authorization", "body", "content_type", "headers",
                                           "method", "path", "query", "x_api_key"}));
        QVERIFY(echo[u"content_type"].isNull());
        QCOMPARE(echo[u"method"].toString(), "GET");
        QCOMPARE(echo[u"path"].toString(), QString::fromLatin1(kVideoAction));
        QCOMPARE(echo[u"query"].toString().toUtf8(), query);
        QCOMPARE(echo[u"authorization"].toString().toUtf8(), "Bearer " + kSocialKey);
        QCOMPARE(echo[u"x_api_key"].toString(), "xk-side-key");
        QVERIFY(echo[u"body"].isNull());
        QCOMPARE(echo[u"headers"].toArray(),
                 QJsonArray({"host", "authorization", "accept", "x-api-key"}));
        // The video action's own data next to echo, read from the decoded query.
        QCOMPARE(data[u"aweme_detail"][u"aweme_id"].toString(), "7+1");
        QCOMPARE(data[u"status_code"].toInt(), 0);

        // An answer without a video is kept as the video fakes give it.
        Reply none = social("GET", kVideoAction + "?aweme_id=404123");
        QCOMPARE(none.status, 200);
        QVERIFY(none.json()[u"data"][u"aweme_detail"].isNull());
        QCOMPARE(none.json()[u"data"][u"filter_list"][0][u"aweme_id"].toString(), "404123");
        // Another action: echo only. An empty value counts as present; no Authorization, no
        // x_api_key, no query.
        none = social("GET", "/api/v1/douyin/web/fetch_one_video?aweme_id=");
        QCOMPARE(none.status, 200);
        QCOMPARE(none.json()[u"data"].toObject().keys(), QStringList({"echo"}));
        QVERIFY(none.json()[u"data"][u"echo"][u"x_api_key"].isNull());
        none = social("GET", "/api/v1/health/check", {});
        QCOMPARE(none.status, 200);
        QVERIFY(none.json()[u"data"][u"echo"][u"authorization"].isNull());
        QCOMPARE(none.json()[u"data"][u"echo"][u"query"].toString(), "");
        QCOMPARE(none.json()[u"params"].toObject(), QJsonObject());
    }

    void socialPost()
    {
        REQUIRE_SOCIAL();
        const QByteArray action = "/api/v1/tiktok/web/fetch_gift_name_by_id";
        const Headers json = tikhub({{"Content-Type", "application/json"}});
        const QByteArray body = "{\"gift_id\": \"5655\",\n \"x\": [1, \"\xe4\xb8\xad\"]}";
        Reply r = social("POST", action + "?lang=en", json, body);
        QCOMPARE(r.status, 200);
        const QJsonObject echo = r.json()[u"data"][u"echo"].toObject();
        QCOMPARE(echo[u"method"].toString(), "POST");
        QCOMPARE(echo[u"body"].toString().toUtf8(), body);
        QCOMPARE(echo[u"query"].toString(), "lang=en");
        QVERIFY(echo[u"headers"].toArray().contains("content-type"));
        QCOMPARE(r.json()[u"params"].toObject(), QJsonObject({{"lang", "en"}}));
        // FastAPI's validation of the body: required members, a body at all, JSON.
        r = social("POST", action, json, "{\"x\":1}");
        QCOMPARE(r.status, 422);
        QCOMPARE(r.body, QByteArray("{\"detail\":[{\"loc\":[\"body\",\"gift_id\"],\"msg\":\"field "
                                    "required\",\"type\":\"value_error.missing\"}]}"));
        r = social("POST", action, json);
        QCOMPARE(r.status, 422);
        QCOMPARE(r.body, QByteArray("{\"detail\":[{\"loc\":[\"body\"],\"msg\":\"field "
                                    "required\",\"type\":\"value_error.missing\"}]}"));
        r = social("POST", action, json, "{not json");
        QCOMPARE(r.status, 422);
        QCOMPARE(r.json()[u"detail"][0][u"type"].toString(), "value_error.jsondecode");
        QCOMPARE(r.json()[u"detail"][0][u"loc"][0].toString(), "body");
        // Types are not checked: an array action takes an object too.
        r = social("POST", "/api/v1/douyin/app/v3/fetch_multi_video", json, "{\"a\": [1]}");
        QCOMPARE(r.status, 200);
    }

    void socialAuthAndValidation()
    {
        REQUIRE_SOCIAL();
        const QByteArray target = kVideoAction + "?aweme_id=1";
        Reply r = social("GET", target, {{"Accept", "application/json"}});
        QCOMPARE(r.status, 401);
        const QJsonObject detail = r.json()[u"detail"].toObject();
        QCOMPARE(detail.keys(),
                 QStringList({"code", "message", "params", "router", "support", "time"}));
        QCOMPARE(detail[u"code"].toInt(), 401);
        QCOMPARE(detail[u"router"].toString(), QString::fromLatin1(kVideoAction));
        QCOMPARE(detail[u"params"].toObject(), QJsonObject({{"aweme_id", "1"}}));
        QCOMPARE(social("GET", target, {{"Authorization", "Basic dXNlcjpwdw=="}}).status, 401);
        QCOMPARE(social("GET", target, {{"X-API-Key", kSocialKey}}).status, 401);
        // 422: every missing required parameter in FastAPI's shape.
        const QByteArray missing = "{\"detail\":[{\"loc\":[\"query\",\"aweme_id\"],\"msg\":\"field "
                                   "required\",\"type\":\"value_error.missing\"}]}";
        r = social("GET", kVideoAction);
        QCOMPARE(r.status, 422);
        QCOMPARE(r.body, missing);
        QCOMPARE(social("GET", kVideoAction + "?aweme_idx=1").body, missing);
        // 405 with Allow, before the key is looked at; the key before validation.
        r = social("POST", target, {}, "{}");
        QCOMPARE(r.status, 405);
        QCOMPARE(r.body, QByteArray("{\"detail\":\"Method Not Allowed\"}"));
        QCOMPARE(r.header("allow"), QByteArray("GET"));
        r = social("GET", "/api/v1/tiktok/web/fetch_gift_name_by_id");
        QCOMPARE(r.status, 405);
        QCOMPARE(r.header("allow"), QByteArray("POST"));
        QCOMPARE(social("GET", kVideoAction, {}).status, 401);

        // --require-key and --key-fault as for the other endpoints.
        FakeProcess fake;
        QVERIFY(
            fake.start({QStringLiteral("--social-openapi"), QStringLiteral(SOCIAL_OPENAPI),
                        QStringLiteral("--require-key"), QString::fromLatin1(kSocialKey),
                        QStringLiteral("--require-key"), QStringLiteral("th-limited-key-42"),
                        QStringLiteral("--key-fault"), QStringLiteral("th-limited-key-42=503")}));
        auto call = [&](const QByteArray &key) {
            Client c(fake.port);
            c.send("GET", target, {{"Authorization", "Bearer " + key}});
            return c.read();
        };
        r = call("th-wrong-key-99998888");
        QCOMPARE(r.status, 401);
        QVERIFY(!r.body.contains("th-wrong-key-99998888"));
        QCOMPARE(call(kSocialKey).status, 200);
        r = call("th-limited-key-42");
        QCOMPARE(r.status, 503);
        QCOMPARE(r.json()[u"detail"][u"code"].toInt(), 503);
        // A public operation of the document needs no key.
        Client open(fake.port);
        open.send("GET", "/api/v1/health/check", {});
        QCOMPARE(open.read().status, 200);
    }

    void socialFaults_data()
    {
        QTest::addColumn<bool>("inQuery");
        QTest::addColumn<QByteArray>("fault");
        QTest::addColumn<int>("status");
        QTest::addColumn<QByteArray>("retryAfter");
        QTest::newRow("400") << true << QByteArray("400") << 400 << QByteArray();
        QTest::newRow("404") << true << QByteArray("404") << 404 << QByteArray();
        QTest::newRow("429") << true << QByteArray("429") << 429 << QByteArray("2");
        QTest::newRow("429:7 header") << false << QByteArray("429:7") << 429 << QByteArray("7");
        QTest::newRow("500") << true << QByteArray("500") << 500 << QByteArray();
        QTest::newRow("503 header") << false << QByteArray("503") << 503 << QByteArray();
        QTest::newRow("599") << true << QByteArray("599") << 599 << QByteArray();
    }
    void socialFaults()
    {
        REQUIRE_SOCIAL();
        QFETCH(bool, inQuery);
        QFETCH(QByteArray, fault);
        QFETCH(int, status);
        QFETCH(QByteArray, retryAfter);
        const Reply r = inQuery ? social("GET", kVideoAction + "?aweme_id=1&x-fake-fault=" + fault)
                                : social("GET", kVideoAction + "?aweme_id=1",
                                         tikhub({{"x-fake-fault", fault}}));
        QCOMPARE(r.status, status);
        QCOMPARE(r.header("retry-after"), retryAfter);
        QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        QVERIFY(r.body.startsWith("{\"detail\":{\"code\":"));
        const QJsonObject detail = r.json()[u"detail"].toObject();
        QCOMPARE(detail[u"code"].toInt(), status);
        QVERIFY(!detail[u"message"].toString().isEmpty());
        QVERIFY(!detail[u"support"].toString().isEmpty());
        QCOMPARE(detail[u"router"].toString(), QString::fromLatin1(kVideoAction));
        QCOMPARE(detail[u"params"][u"aweme_id"].toString(), "1");
    }

    void socialBrokenConnections()
    {
        REQUIRE_SOCIAL();
        m_social.resetStats();
        const QByteArray target = kVideoAction + "?aweme_id=1";
        // reset: not a byte.
        Client early(m_social.port);
        early.send("GET", target + "&x-fake-fault=reset", tikhub());
        Reply r = early.read(5000);
        QVERIFY(r.closed);
        QVERIFY(early.raw().isEmpty());
        QTRY_COMPARE_WITH_TIMEOUT(m_social.stats()[u"faulted"].toInt(), 1, 5000);
        // reset-mid-body: the head and half the body, then a reset.
        Client mid(m_social.port);
        mid.send("GET", target + "&x-fake-fault=reset-mid-body&x-fake-bytes=100000", tikhub());
        r = mid.read(5000);
        QCOMPARE(r.status, 200);
        QVERIFY(!r.complete);
        QVERIFY(r.closed);
        QCOMPARE(mid.socket().error(), QAbstractSocket::RemoteHostClosedError);
        QCOMPARE(r.body.size(), 50000);
        QVERIFY(r.body.startsWith("{\"code\":200,"));
        // ... also of an unpadded answer, and after a given number of bytes.
        Client whole(m_social.port);
        whole.send("GET", target + "&x-fake-fault=reset-mid-body:100", tikhub());
        r = whole.read(5000);
        QCOMPARE(r.status, 200);
        QVERIFY(!r.complete);
        QVERIFY(r.closed);
        QCOMPARE(r.body.size(), 100);
        QTRY_COMPARE_WITH_TIMEOUT(m_social.stats()[u"faulted"].toInt(), 3, 5000);
        // malformed-json: a complete answer cut in half.
        r = social("GET", target + "&x-fake-fault=malformed-json");
        QCOMPARE(r.status, 200);
        QVERIFY(r.complete);
        QVERIFY(r.body.startsWith("{\"code\":200,"));
        QVERIFY(!parses(r.body));
        // hang: nothing until the client leaves.
        auto c = std::make_unique<Client>(m_social.port);
        c->send("GET", target + "&x-fake-fault=hang", tikhub());
        QVERIFY(!c->socket().waitForReadyRead(300));
        QCOMPARE(m_social.stats()[u"open_requests"].toInt(), 1);
        c->socket().abort();
        QTRY_COMPARE_WITH_TIMEOUT(m_social.stats()[u"cancelled"].toInt(), 1, 5000);
        // stall-mid-body: half, then silence.
        c = std::make_unique<Client>(m_social.port);
        c->send("GET", target + "&x-fake-fault=stall-mid-body&x-fake-bytes=10000", tikhub());
        r = c->read(500);
        QCOMPARE(r.status, 200);
        QVERIFY(!r.complete);
        QVERIFY(!r.closed);
        QCOMPARE(r.body.size(), 5000);
        c.reset();
        QTRY_COMPARE_WITH_TIMEOUT(m_social.stats()[u"cancelled"].toInt(), 2, 5000);
        QCOMPARE(m_social.stats()[u"open_requests"].toInt(), 0);
        // slow-first-byte:MS holds the answer, not the others.
        QElapsedTimer timer;
        timer.start();
        Client slow(m_social.port);
        slow.send("GET", target + "&x-fake-fault=slow-first-byte:1200", tikhub());
        QCOMPARE(social("GET", target).status, 200);
        QVERIFY(timer.elapsed() < 1000);
        r = slow.read(5000);
        QCOMPARE(r.status, 200);
        QVERIFY2(timer.elapsed() >= 1190, QByteArray::number(timer.elapsed()).constData());
    }

    void socialEnvelopeCode()
    {
        REQUIRE_SOCIAL();
        Reply r = social("GET", kVideoAction + "?aweme_id=1&x-fake-code=500");
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.startsWith("{\"code\":500,"));
        QVERIFY(r.json()[u"message"].toString().contains("500"));
        QCOMPARE(r.json()[u"data"][u"echo"][u"query"].toString(), "aweme_id=1&x-fake-code=500");
        r = social("GET", kVideoAction + "?aweme_id=1", tikhub({{"x-fake-code", "0"}}));
        QVERIFY(r.body.startsWith("{\"code\":0,"));
    }

    void socialBytes_data()
    {
        QTest::addColumn<qint64>("bytes");
        QTest::newRow("small") << qint64(3000);
        QTest::newRow("1 MB") << qint64(1'000'000);
        QTest::newRow("4 MB") << qint64(4'000'000);
    }
    void socialBytes()
    {
        REQUIRE_SOCIAL();
        QFETCH(qint64, bytes);
        const Reply r =
            social("GET", kVideoAction + "?aweme_id=1&x-fake-bytes=" + QByteArray::number(bytes));
        QCOMPARE(r.status, 200);
        QVERIFY(r.chunked);
        QVERIFY(r.complete);
        QCOMPARE(r.body.size(), bytes);
        QVERIFY(r.body.startsWith("{\"code\":200,"));
        QJsonParseError error;
        const QJsonObject o = QJsonDocument::fromJson(r.body, &error).object();
        QCOMPARE(error.error, QJsonParseError::NoError);
        const QJsonObject data = o[u"data"].toObject();
        QCOMPARE(data[u"echo"][u"path"].toString(), QString::fromLatin1(kVideoAction));
        QCOMPARE(data[u"aweme_detail"][u"aweme_id"].toString(), "1");
        QVERIFY(data[u"padding"].toString().startsWith("abcdefghijklmnopqrstuvwxyzabc"));
        QVERIFY(r.body.endsWith("\"}}"));
    }

    void socialBadOptions()
    {
        REQUIRE_SOCIAL();
        const QByteArray target = kVideoAction + "?aweme_id=1";
        auto check = [&](const Reply &r, const char *mentions) {
            QCOMPARE(r.status, 400);
            QCOMPARE(r.json()[u"detail"][u"code"].toInt(), 400);
            QVERIFY2(r.json()[u"detail"][u"message"].toString().contains(mentions),
                     r.body.constData());
        };
        check(social("GET", target + "&x-fake-bytes=100"), "below the size");
        check(social("GET", target + "&x-fake-bytes=67108865"), "bytes");
        check(social("GET", target + "&x-fake-bytes=lots"), "bytes");
        check(social("GET", target + "&x-fake-typo=1"), "typo");
        check(social("GET", target + "&x-fake-fault=explode"), "explode");
        check(social("GET", target, tikhub({{"x-fake-pieces", "0"}})), "pieces");
        // 64 MiB is the most.
        Client big(m_social.port);
        big.send("GET", target + "&x-fake-bytes=67108864", tikhub());
        QVERIFY(big.socket().waitForReadyRead(5000));
        QVERIFY(big.socket().readAll().startsWith("HTTP/1.1 200 OK"));
    }

    void socialPieces()
    {
        REQUIRE_SOCIAL();
        QElapsedTimer timer;
        timer.start();
        Client c(m_social.port);
        c.send("GET", kVideoAction + "?aweme_id=1&x-fake-pieces=4&x-fake-interval-ms=150",
               tikhub({{"x-fake-delay-ms", "100"}}));
        QVERIFY(c.socket().waitForReadyRead(2000));
        const qint64 firstByte = timer.elapsed();
        QVERIFY2(firstByte >= 95, QByteArray::number(firstByte).constData());
        const Reply r = c.read(5000);
        const qint64 total = timer.elapsed();
        QVERIFY(r.complete);
        QVERIFY2(total >= 100 + 3 * 150 - 10, QByteArray::number(total).constData());
        QVERIFY2(total < 2000, QByteArray::number(total).constData());
        QCOMPARE(r.chunks.size(), 4);
        for (const QByteArray &chunk : r.chunks)
            QVERIFY(qAbs(chunk.size() - r.body.size() / 4) <= 1);
        QVERIFY(c.arrivals.size() >= 3); // arrived in several reads, not one
        QVERIFY(parses(r.body));
        QVERIFY(r.body.startsWith("{\"code\":200,"));
        // With a size: the pieces split the padded body.
        const Reply sized = social("GET", kVideoAction + "?aweme_id=1&x-fake-bytes=300000" +
                                              "&x-fake-pieces=3&x-fake-interval-ms=50");
        QCOMPARE(sized.body.size(), 300000);
        QVERIFY(parses(sized.body));
    }

    void socialKeepsOtherPaths()
    {
        REQUIRE_SOCIAL();
        // The OpenRouter-style aliases under /api/v1 are untouched by the catalog.
        Client models(m_social.port);
        models.send("GET", "/api/v1/models", {});
        Reply r = models.read();
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json()[u"data"][0][u"id"].toString(), "fakeai/echo-small");
        r = social("POST", "/api/v1/chat/completions", openAi(), chatBody("still here"));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json()[u"choices"][0][u"message"][u"content"].toString(), "Echo: still here");
        r = social("POST", "/api/v1/decisions", openAi(), decisionBody("s"));
        QCOMPARE(r.status, 200);
        r = social("GET", "/api/v1/douyin/app/v3/no_such_action?aweme_id=1");
        QCOMPARE(r.status, 404);
        QVERIFY(r.json()[u"error"][u"message"].toString().startsWith("Unknown request URL"));
    }

    void redirect()
    {
        REQUIRE_SOCIAL();
        m_social.resetStats();
        Reply r = social("GET", "/fake/redirect?to=https%3A%2F%2Fb.example%2Fx%3Fy%3D1", {});
        QCOMPARE(r.status, 302);
        QCOMPARE(r.header("location"), QByteArray("https://b.example/x?y=1"));
        r = social("GET", "/fake/redirect?to=https%3A%2F%2Fb.example%2F&status=301", {});
        QCOMPARE(r.status, 301);
        QCOMPARE(m_social.stats()[u"requests"].toInt(), 0); // a control URL, not a request
    }

    void socialStatsAndLog()
    {
        REQUIRE_SOCIAL();
        m_social.resetStats();
        const QByteArray target = kVideoAction + "?aweme_id=%E4%B8%AD+1";
        QCOMPARE(social("GET", target, {}).status, 401);
        QCOMPARE(social("GET", target).status, 200);
        QCOMPARE(social("GET", "/openapi.json", {}).status, 200);
        const QJsonObject stats = m_social.stats();
        QCOMPARE(stats[u"requests"].toInt(), 3);
        QCOMPARE(stats[u"completed"].toInt(), 2); // answers made (the 401 is a refusal)
        QCOMPARE(stats[u"by_path"][QString::fromLatin1(kVideoAction)].toInt(), 2);
        QCOMPARE(stats[u"by_path"][u"/openapi.json"].toInt(), 1);
        const QList<QByteArray> lines = readFile(m_socialLogPath).trimmed().split('\n');
        QVERIFY(lines.size() >= 3);
        const QJsonObject line = QJsonDocument::fromJson(lines[lines.size() - 2]).object();
        QCOMPARE(line[u"target"].toString().toUtf8(), target);
        QCOMPARE(line[u"headers"][u"authorization"].toString(), "Bearer ***6789");
        QVERIFY(!lines[lines.size() - 2].contains(kSocialKey));
    }

    // ------------------------------------------------------------------ faults

    void statusFaults_data()
    {
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<QByteArray>("fault");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("type");
        QTest::newRow("chat 429") << QByteArray("/v1/chat/completions") << QByteArray("429") << 429
                                  << "requests";
        QTest::newRow("chat 500") << QByteArray("/v1/chat/completions") << QByteArray("500") << 500
                                  << "server_error";
        QTest::newRow("responses 503")
            << QByteArray("/v1/responses") << QByteArray("503") << 503 << "server_error";
        QTest::newRow("messages 429")
            << QByteArray("/v1/messages") << QByteArray("429:7") << 429 << "rate_limit_error";
        QTest::newRow("messages 500")
            << QByteArray("/v1/messages") << QByteArray("500") << 500 << "api_error";
        QTest::newRow("messages 529")
            << QByteArray("/v1/messages") << QByteArray("529") << 529 << "overloaded_error";
    }

    void statusFaults()
    {
        QFETCH(QByteArray, path);
        QFETCH(QByteArray, fault);
        QFETCH(int, status);
        QFETCH(QString, type);
        const bool messages = path == "/v1/messages";
        const QByteArray body = messages                  ? messagesBody("x")
                                : path == "/v1/responses" ? responsesBody("x")
                                                          : chatBody("x");
        const Reply r = post(
            path, body, (messages ? anthropic() : openAi()) + Headers{{"x-fake-fault", fault}});
        QCOMPARE(r.status, status);
        if (status == 429)
            QCOMPARE(r.header("retry-after"), fault.contains(':') ? QByteArray("7") : "2");
        else
            QVERIFY(r.header("retry-after").isEmpty());
        if (messages) {
            QCOMPARE(r.json()[u"type"].toString(), "error");
            QCOMPARE(r.json()[u"error"][u"type"].toString(), type);
            QVERIFY(!r.json()[u"error"][u"message"].toString().isEmpty());
            QCOMPARE(r.json()[u"request_id"].toString().toUtf8(), r.header("request-id"));
        } else {
            const QJsonObject error = r.json()[u"error"].toObject();
            QCOMPARE(error[u"type"].toString(), type);
            QVERIFY(!error[u"message"].toString().isEmpty());
            QVERIFY(error.contains("param"));
            QCOMPARE(error[u"code"].toString(),
                     status == 429 ? QStringLiteral("rate_limit_exceeded") : QString());
        }
    }

    void malformedJson()
    {
        Reply r = post("/v1/chat/completions", chatBody("hello"),
                       openAi({{"x-fake-fault", "malformed-json"}}));
        QCOMPARE(r.status, 200);
        QVERIFY(r.complete);
        QVERIFY(!r.body.isEmpty());
        QVERIFY(!parses(r.body));

        r = post("/v1/messages", messagesBody("hello", {{"stream", true}}),
                 anthropic({{"x-fake-fault", "malformed-json:1"}, {"x-fake-chunks", "4"}}));
        QVERIFY(r.complete); // the stream goes on after the broken event
        const QList<SseEvent> events = parseSse(r.body);
        QCOMPARE(events.size(), 3 + 4 + 3);
        for (qsizetype i = 0; i < events.size(); ++i)
            QCOMPARE(parses(events[i].data), i != 3 + 1);
        QCOMPARE(events.last().event, QByteArray("message_stop"));
    }

    void resetMidStream()
    {
        Client c(m_fake.port);
        QVERIFY(c.send("POST", "/v1/chat/completions",
                       openAi({{"x-fake-fault", "reset-mid-stream:2"}, {"x-fake-chunks", "4"}}),
                       chatBody("hello world", {{"stream", true}})));
        const Reply r = c.read(5000);
        QCOMPARE(r.status, 200);
        QVERIFY(!r.complete);
        QVERIFY(r.closed);
        QCOMPARE(c.socket().error(), QAbstractSocket::RemoteHostClosedError);
        const QList<SseEvent> events = parseSse(r.body);
        QCOMPARE(events.size(), 1 + 2); // the role chunk and two pieces, nothing after
        QVERIFY(!r.body.contains("[DONE]"));

        // A whole body cut in half.
        Client whole(m_fake.port);
        whole.send("POST", "/v1/messages", anthropic({{"x-fake-fault", "reset-mid-stream"}}),
                   messagesBody("x"));
        const Reply half = whole.read(5000);
        QCOMPARE(half.status, 200);
        QVERIFY(!half.complete);
        QVERIFY(half.closed);
        QVERIFY(half.body.startsWith("{\"id\":\"msg_01"));

        // Before any byte.
        Client early(m_fake.port);
        early.send("POST", "/v1/chat/completions", openAi({{"x-fake-fault", "reset"}}),
                   chatBody("x"));
        const Reply none = early.read(5000);
        QVERIFY(none.closed);
        QVERIFY(early.raw().isEmpty());
    }

    void errorMidStream()
    {
        Reply r = post("/v1/chat/completions", chatBody("hello", {{"stream", true}}),
                       openAi({{"x-fake-fault", "error-mid-stream:1"}}));
        QVERIFY(r.complete);
        QList<SseEvent> events = parseSse(r.body);
        QCOMPARE(events.size(), 1 + 1 + 1);
        QCOMPARE(jsonOf(events.last())[u"error"][u"type"].toString(), "server_error");
        QVERIFY(!r.body.contains("[DONE]"));

        r = post("/v1/messages", messagesBody("hello", {{"stream", true}}),
                 anthropic({{"x-fake-fault", "error-mid-stream:0"}}));
        events = parseSse(r.body);
        QCOMPARE(events.size(), 3 + 1);
        QCOMPARE(events.last().event, QByteArray("error"));
        QCOMPARE(jsonOf(events.last())[u"error"][u"type"].toString(), "overloaded_error");
    }

    void hangAndCancel()
    {
        m_fake.resetStats();
        auto c = std::make_unique<Client>(m_fake.port);
        QVERIFY(c->send("POST", "/v1/chat/completions", openAi({{"x-fake-fault", "hang"}}),
                        chatBody("x", {{"stream", true}})));
        QVERIFY(!c->socket().waitForReadyRead(300));
        QCOMPARE(c->raw().size(), 0);
        QJsonObject stats = m_fake.stats();
        QCOMPARE(stats[u"open_requests"].toInt(), 1);
        QCOMPARE(stats[u"open_streams"].toInt(), 1);
        c->socket().abort();
        QTRY_COMPARE_WITH_TIMEOUT(m_fake.stats()[u"cancelled"].toInt(), 1, 5000);
        stats = m_fake.stats();
        QCOMPARE(stats[u"open_requests"].toInt(), 0);
        QCOMPARE(stats[u"open_streams"].toInt(), 0);

        // A stalled stream: some events, then silence until the client leaves.
        c = std::make_unique<Client>(m_fake.port);
        c->send("POST", "/v1/messages", anthropic({{"x-fake-fault", "stall-mid-stream:1"}}),
                messagesBody("x", {{"stream", true}}));
        const Reply r = c->read(500);
        QVERIFY(!r.complete);
        QVERIFY(!r.closed);
        QCOMPARE(parseSse(r.body).size(), 3 + 1);
        c.reset();
        QTRY_COMPARE_WITH_TIMEOUT(m_fake.stats()[u"cancelled"].toInt(), 2, 5000);
    }

    void slowFirstByteDoesNotBlock()
    {
        QElapsedTimer timer;
        timer.start();
        Client slow(m_fake.port);
        slow.send("POST", "/v1/chat/completions",
                  openAi({{"x-fake-fault", "slow-first-byte:1500"}}), chatBody("slow"));
        const Reply fast = post("/v1/chat/completions", chatBody("fast"), openAi());
        QCOMPARE(fast.status, 200);
        QVERIFY2(timer.elapsed() < 1000, QByteArray::number(timer.elapsed()).constData());
        QVERIFY(!slow.socket().waitForReadyRead(100));
        const Reply late = slow.read(5000);
        QCOMPARE(late.status, 200);
        QVERIFY(timer.elapsed() >= 1450);
        QCOMPARE(late.json()[u"choices"][0][u"message"][u"content"].toString(), "Echo: slow");
    }

    void pacing()
    {
        // First byte after delay-ms, then one piece per interval-ms, each sent as it is made.
        QElapsedTimer timer;
        timer.start();
        Client c(m_fake.port);
        c.send("POST", "/v1/chat/completions",
               openAi({{"x-fake-delay-ms", "200"},
                       {"x-fake-interval-ms", "100"},
                       {"x-fake-chunks", "4"}}),
               chatBody("paced", {{"stream", true}}));
        QVERIFY(c.socket().waitForReadyRead(2000));
        const qint64 firstByte = timer.elapsed();
        QVERIFY2(firstByte >= 190, QByteArray::number(firstByte).constData());
        const Reply r = c.read(5000);
        QVERIFY(r.complete);
        const qint64 total = timer.elapsed();
        QVERIFY2(total >= 200 + 3 * 100 - 10, QByteArray::number(total).constData());
        QVERIFY2(total < 2000, QByteArray::number(total).constData());
        QVERIFY(c.arrivals.size() >= 3); // arrived in several reads, not one
    }

    void directiveInText()
    {
        Reply r =
            post("/v1/chat/completions", chatBody("hello [fake chunks=3 fault=503]"), openAi());
        QCOMPARE(r.status, 503);
        r = post("/v1/chat/completions", chatBody("hello [fake chunks=3]"), openAi());
        QCOMPARE(r.json()[u"usage"][u"completion_tokens"].toInt(), 3);
        // Headers win over the directive.
        r = post("/v1/chat/completions", chatBody("hello [fake chunks=3]"),
                 openAi({{"x-fake-chunks", "5"}}));
        QCOMPARE(r.json()[u"usage"][u"completion_tokens"].toInt(), 5);
        r = post("/v1/chat/completions", chatBody("x"), openAi({{"x-fake-text", "Exact text."}}));
        QCOMPARE(r.json()[u"choices"][0][u"message"][u"content"].toString(), "Exact text.");
    }

    void invalidOptions()
    {
        Reply r = post("/v1/chat/completions", chatBody("x"), openAi({{"x-fake-chunks", "zero"}}));
        QCOMPARE(r.status, 400);
        QVERIFY(r.json()[u"error"][u"message"].toString().contains("chunks"));
        r = post("/v1/chat/completions", chatBody("x"), openAi({{"x-fake-typo", "1"}}));
        QCOMPARE(r.status, 400);
        r = post("/v1/messages", messagesBody("x"), anthropic({{"x-fake-fault", "explode"}}));
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json()[u"error"][u"type"].toString(), "invalid_request_error");
        r = post("/v1/chat/completions", "{not json", openAi());
        QCOMPARE(r.status, 400);
        r = post("/v1/unknown", "{}", openAi());
        QCOMPARE(r.status, 404);
    }

    void requestLog()
    {
        const QByteArray body =
            "{\n  \"model\": \"m\",\n  \"x_unknown\": {\"n\": 12345678901234567890, \"s\": "
            "\"\\u00e9\"},\n"
            "  \"messages\": [{\"role\": \"user\", \"content\": \"logged\"}]\n}";
        const Reply r = post("/v1/chat/completions?trace=1", body,
                             openAi({{"X-Custom", "a"}, {"x-custom", "b"}}));
        QCOMPARE(r.status, 200);
        QFile log(m_logPath);
        QVERIFY(log.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = log.readAll().trimmed().split('\n');
        const QJsonObject line = QJsonDocument::fromJson(lines.last()).object();
        QCOMPARE(line[u"method"].toString(), "POST");
        QCOMPARE(line[u"path"].toString(), "/v1/chat/completions");
        QCOMPARE(line[u"target"].toString(), "/v1/chat/completions?trace=1");
        QCOMPARE(line[u"body"].toString().toUtf8(), body); // exact bytes, unknown fields and all
        const QJsonObject headers = line[u"headers"].toObject();
        QCOMPARE(headers[u"authorization"].toString(), "Bearer ***wxyz");
        QCOMPARE(headers["x-custom"].toString(), "a, b");
        QVERIFY(!lines.last().contains(kOpenAiKey));
    }

    void requiredKeysAndKeyFaults()
    {
        FakeProcess fake;
        QVERIFY(fake.start({QStringLiteral("--require-key"), QStringLiteral("sk-good-00001111"),
                            QStringLiteral("--require-key"), QStringLiteral("sk-limited-2222"),
                            QStringLiteral("--key-fault"), QStringLiteral("sk-limited-2222=429")}));
        auto call = [&](const QByteArray &path, const Headers &headers, const QByteArray &body) {
            Client c(fake.port);
            c.send("POST", path, headers, body);
            return c.read();
        };
        const Headers json{{"content-type", "application/json"}};
        Reply r =
            call("/v1/chat/completions",
                 json + Headers{{"authorization", "Bearer sk-wrong-99998888"}}, chatBody("x"));
        QCOMPARE(r.status, 401);
        QCOMPARE(r.json()[u"error"][u"code"].toString(), "invalid_api_key");
        QVERIFY(!r.body.contains("sk-wrong-99998888"));
        r = call("/v1/messages",
                 json + Headers{{"x-api-key", "sk-wrong"}, {"anthropic-version", "2023-06-01"}},
                 messagesBody("x"));
        QCOMPARE(r.status, 401);
        QCOMPARE(r.json()[u"error"][u"type"].toString(), "authentication_error");
        r = call("/v1/chat/completions",
                 json + Headers{{"authorization", "Bearer sk-good-00001111"}}, chatBody("x"));
        QCOMPARE(r.status, 200);
        r = call("/v1/chat/completions",
                 json + Headers{{"authorization", "Bearer sk-limited-2222"}}, chatBody("x"));
        QCOMPARE(r.status, 429);
        QCOMPARE(r.header("retry-after"), QByteArray("2"));
    }

    void concurrentStreams()
    {
        // A thousand streams open at once on one process, all progressing together.
        constexpr int kStreams = 1000;
        FakeProcess fake;
        QVERIFY(fake.start({QStringLiteral("--interval-ms"), QStringLiteral("100"),
                            QStringLiteral("--chunks"), QStringLiteral("15")}));
        std::vector<std::unique_ptr<QTcpSocket>> sockets;
        std::vector<QByteArray> received(kStreams);
        int done = 0;
        const QByteArray request = requestBytes("POST", "/v1/chat/completions", openAi(),
                                                chatBody("many streams", {{"stream", true}}));
        for (int i = 0; i < kStreams; ++i) {
            auto socket = std::make_unique<QTcpSocket>();
            QTcpSocket *s = socket.get();
            connect(s, &QTcpSocket::connected, s, [s, &request] { s->write(request); });
            connect(s, &QTcpSocket::readyRead, s, [s, i, &received, &done] {
                received[i] += s->readAll();
                if (received[i].endsWith("\r\n0\r\n\r\n"))
                    ++done;
            });
            s->connectToHost(QHostAddress::LocalHost, fake.port);
            sockets.push_back(std::move(socket));
        }
        QTRY_VERIFY_WITH_TIMEOUT(fake.stats()[u"open_streams"].toInt() == kStreams, 15'000);
        QCOMPARE(done, 0); // every one of them is still going
        QTRY_COMPARE_WITH_TIMEOUT(done, kStreams, 30'000);
        const QJsonObject stats = fake.stats();
        QCOMPARE(stats[u"max_open_streams"].toInt(), kStreams);
        QCOMPARE(stats[u"completed"].toInt(), kStreams);
        QCOMPARE(stats[u"open_streams"].toInt(), 0);
        for (const QByteArray &raw : received) {
            const Reply r = parseResponse(raw);
            QVERIFY(r.complete);
            QCOMPARE(parseSse(r.body).size(), 1 + 15 + 1 + 1);
        }
    }

    void exitsWhenStdinCloses()
    {
        FakeProcess fake;
        QVERIFY(fake.start());
        fake.process().closeWriteChannel();
        QVERIFY(fake.process().waitForFinished(5000));
        QCOMPARE(fake.process().exitStatus(), QProcess::NormalExit);
        QCOMPARE(fake.process().exitCode(), 0);
    }

    void exitsOnSigterm()
    {
        FakeProcess fake;
        QVERIFY(fake.start());
        fake.process().terminate();
        QVERIFY(fake.process().waitForFinished(5000));
        QCOMPARE(fake.process().exitStatus(), QProcess::NormalExit);
        QCOMPARE(fake.process().exitCode(), 0);
    }

    void listensOnLoopbackOnly()
    {
        QProcess p;
        p.start(QStringLiteral(FAKE_UPSTREAM_PATH),
                {QStringLiteral("--listen"), QStringLiteral("0.0.0.0:0")});
        QVERIFY(p.waitForFinished(5000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(p.readAllStandardError().contains("loopback"));
        QVERIFY(p.readAllStandardOutput().isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestFakeUpstream)
#include "tst_fake_upstream.moc"
