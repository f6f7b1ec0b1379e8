#include "FakeUpstream.h"

#include "AudioDecoder.h"
#include "AudioFakes.h"
#include "DecisionFakes.h"
#include "http/HttpConnection.h"
#include "http/HttpServer.h"
#include "http/Multipart.h"
#include "ImageFakes.h"
#include "SocialFakes.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QTcpSocket>

#include <functional>
#include <limits>
#include <sys/socket.h>

namespace {

constexpr qint64 kBodyLimit = 64 * 1024 * 1024;
constexpr int kMaxConnections = 1'000'000;
constexpr int kDefaultSlowFirstByteMs = 10'000;
constexpr int kMaxDelayMs = 3'600'000;
constexpr int kMaxChunks = 100'000;
constexpr int kResetGraceMinMs = 50; // lets the client read what was sent before the reset

// Accepts connections like HttpServer and tells the fake about each new one, so an exchange can
// be traced back to its socket (the reset faults need the socket; HttpExchange hides it).
class FakeServer : public HttpServer
{
public:
    FakeServer(HttpHandler &handler, std::function<void(HttpConnection *)> onConnection,
               QObject *parent)
        : HttpServer(handler, HttpLimits{}, kMaxConnections, parent),
          m_onConnection(std::move(onConnection))
    {
    }

protected:
    void incomingConnection(qintptr descriptor) override
    {
        HttpServer::incomingConnection(descriptor);
        // HttpServer parents each new connection to itself: it is the newest child.
        const QObjectList &kids = children();
        for (auto it = kids.crbegin(); it != kids.crend(); ++it) {
            if (auto *connection = qobject_cast<HttpConnection *>(*it)) {
                m_onConnection(connection);
                return;
            }
        }
    }

private:
    std::function<void(HttpConnection *)> m_onConnection;
};

struct CatalogEntry
{
    const char *id;
    const char *name;
    int contextLength;
    const char *prompt; // USD per token, as OpenRouter writes them
    const char *completion;
    const char *cacheRead; // nullptr: not offered
    const char *cacheWrite;
};

// The built-in OpenRouter-style catalog (prices per token, decimal strings).
const CatalogEntry kCatalog[] = {
    {"fakeai/echo-small", "FakeAI: Echo Small", 32768, "0.0000001", "0.0000004", "0.00000001",
     nullptr},
    {"fakeai/echo-large", "FakeAI: Echo Large", 200000, "0.000001", "0.000002", "0.0000001",
     "0.00000125"},
    {"openai/gpt-fake", "OpenAI: GPT Fake", 128000, "0.0000025", "0.00001", "0.00000125", nullptr},
    {"anthropic/claude-fake", "Anthropic: Claude Fake", 200000, "0.000003", "0.000015", "0.0000003",
     "0.00000375"},
    {"deepseek/deepseek-fake", "DeepSeek: DeepSeek Fake", 65536, "0.00000027", "0.0000011",
     "0.00000007", nullptr},
    {"meta-llama/llama-fake:free", "Meta: Llama Fake (free)", 8192, "0", "0", nullptr, nullptr},
};
constexpr qint64 kCatalogCreated = 1'700'000'000;

const QStringList &knownOptions()
{
    static const QStringList names{QStringLiteral("chunks"),
                                   QStringLiteral("delay-ms"),
                                   QStringLiteral("interval-ms"),
                                   QStringLiteral("fault"),
                                   QStringLiteral("tool"),
                                   QStringLiteral("cache-read"),
                                   QStringLiteral("cache-write"),
                                   QStringLiteral("text"),
                                   QStringLiteral("delta-usage"),
                                   QStringLiteral("echo-key"),
                                   QStringLiteral("images"),
                                   QStringLiteral("cost"),
                                   QStringLiteral("ignore-max-tokens")};
    return names;
}

QHash<QString, QString> parseDirective(const QString &text)
{
    QHash<QString, QString> options;
    if (!text.contains(QLatin1String("[fake")))
        return options;
    static const QRegularExpression block(
        QStringLiteral("\\[fake((?:\\s+[a-z-]+=[^\\s\\]]+)+)\\s*\\]"));
    static const QRegularExpression pair(QStringLiteral("([a-z-]+)=([^\\s\\]]+)"));
    auto blocks = block.globalMatch(text);
    while (blocks.hasNext()) {
        const QString body = blocks.next().captured(1);
        auto pairs = pair.globalMatch(body);
        while (pairs.hasNext()) {
            const auto m = pairs.next();
            options.insert(m.captured(1), m.captured(2));
        }
    }
    return options;
}

QByteArray mask(const QByteArray &secret)
{
    if (secret.size() <= 8)
        return "***";
    return "***" + secret.right(4);
}

QByteArray maskHeader(const QByteArray &name, const QByteArray &value)
{
    if (name == "authorization" || name == "proxy-authorization") {
        const qsizetype space = value.indexOf(' ');
        if (space > 0)
            return value.left(space + 1) + mask(value.mid(space + 1).trimmed());
        return mask(value);
    }
    if (name == "x-api-key" || name == "api-key" || name == "cookie")
        return mask(value);
    return value;
}

bool parseInt(const QString &text, qint64 min, qint64 max, qint64 *out)
{
    bool ok = false;
    const qint64 v = text.trimmed().toLongLong(&ok);
    if (!ok || v < min || v > max)
        return false;
    *out = v;
    return true;
}

bool isMidStream(Fault::Kind kind)
{
    return kind == Fault::Kind::ResetMidStream || kind == Fault::Kind::StallMidStream ||
           kind == Fault::Kind::ErrorMidStream;
}

QString statusMessage(int status)
{
    switch (status) {
    case 429:
        return QStringLiteral("Rate limit reached for requests (injected by the fake upstream). "
                              "Please try again in 2s.");
    case 500:
        return QStringLiteral("The server had an error while processing your request "
                              "(injected by the fake upstream).");
    case 502:
        return QStringLiteral("Bad gateway (injected by the fake upstream).");
    case 503:
        return QStringLiteral("The service is temporarily overloaded (injected by the fake "
                              "upstream).");
    case 504:
        return QStringLiteral("The upstream timed out (injected by the fake upstream).");
    case 529:
        return QStringLiteral("Overloaded");
    default:
        return QStringLiteral("Injected HTTP %1 (fake upstream).").arg(status);
    }
}

} // namespace

// ------------------------------------------------------------------------------------ Fault

std::optional<Fault> Fault::parse(const QString &text)
{
    Fault f;
    const QString t = text.trimmed().toLower();
    if (t.isEmpty() || t == QLatin1String("none"))
        return f;
    const qsizetype colon = t.indexOf(QLatin1Char(':'));
    const QString name = colon < 0 ? t : t.left(colon);
    const QString arg = colon < 0 ? QString() : t.mid(colon + 1);
    qint64 value = -1;
    if (!arg.isEmpty() && !parseInt(arg, 0, kMaxDelayMs, &value))
        return std::nullopt;

    bool isNumber = false;
    const int status = name.toInt(&isNumber);
    if (isNumber) {
        if (name.size() != 3 || status < 400 || status > 599)
            return std::nullopt;
        f.kind = Kind::Status;
        f.value = status;
        if (value >= 0) {
            if (status != 429)
                return std::nullopt;
            f.retryAfter = int(value);
        }
        return f;
    }
    static const QHash<QString, Kind> kinds{
        {QStringLiteral("slow-first-byte"), Kind::SlowFirstByte},
        {QStringLiteral("reset-mid-stream"), Kind::ResetMidStream},
        {QStringLiteral("reset-mid-body"), Kind::ResetMidStream},
        {QStringLiteral("stall-mid-stream"), Kind::StallMidStream},
        {QStringLiteral("stall-mid-body"), Kind::StallMidStream},
        {QStringLiteral("error-mid-stream"), Kind::ErrorMidStream},
        {QStringLiteral("malformed-json"), Kind::MalformedJson},
        {QStringLiteral("hang"), Kind::Hang},
        {QStringLiteral("reset"), Kind::Reset},
    };
    const auto it = kinds.find(name);
    if (it == kinds.end())
        return std::nullopt;
    if ((*it == Kind::Hang || *it == Kind::Reset) && value >= 0)
        return std::nullopt;
    f.kind = *it;
    f.value = int(value);
    return f;
}

// ------------------------------------------------------------------------------ FakeUpstream

struct FakeUpstream::Context
{
    ExchangePtr exchange;
    HttpConnection *connection = nullptr;
    quint64 seq = 0;
    QByteArray requestId;
    Protocol protocol = Protocol::Chat; // decides the error envelope
    QByteArray key;                     // the credential the request carried
    QJsonObject body;
    bool stream = false;
    bool fish = false;    // fish-speech's error envelope
    bool echoKey = false; // echo-key=1: injected errors quote the key (to test scrubbing)
};

FakeUpstream::FakeUpstream(FakeOptions options, QObject *parent)
    : QObject(parent), m_options(std::move(options))
{
    m_server = new FakeServer(
        *this, [this](HttpConnection *c) { trackConnection(c); }, this);
}

FakeUpstream::~FakeUpstream()
{
    m_stopping = true;
    // Connections go first, while the jobs they notify can still reach this object.
    delete m_server;
    m_server = nullptr;
}

bool FakeUpstream::start(QString *error)
{
    const auto fault = Fault::parse(m_options.fault);
    if (!fault) {
        *error = QStringLiteral("invalid --fault value: %1").arg(m_options.fault);
        return false;
    }
    m_defaultFault = *fault;
    for (auto it = m_options.keyFaults.cbegin(); it != m_options.keyFaults.cend(); ++it) {
        if (!Fault::parse(*it)) {
            *error = QStringLiteral("invalid --key-fault value: %1").arg(*it);
            return false;
        }
    }
    if (!m_options.logPath.isEmpty()) {
        m_log.setFileName(m_options.logPath);
        if (!m_log.open(QIODevice::WriteOnly | QIODevice::Append)) {
            *error = QStringLiteral("cannot open the log %1: %2")
                         .arg(m_options.logPath, m_log.errorString());
            return false;
        }
    }
    if (!m_options.catalogPath.isEmpty()) {
        QFile file(m_options.catalogPath);
        if (!file.open(QIODevice::ReadOnly)) {
            *error = QStringLiteral("cannot read the catalog %1: %2")
                         .arg(m_options.catalogPath, file.errorString());
            return false;
        }
        m_catalogFile = file.readAll();
        if (!QJsonDocument::fromJson(m_catalogFile)
                 .object()
                 .value(QLatin1String("data"))
                 .isArray()) {
            *error = QStringLiteral("the catalog %1 is not a JSON object with a \"data\" array")
                         .arg(m_options.catalogPath);
            return false;
        }
    }
    if (!m_options.socialOpenApiPath.isEmpty()) {
        m_social = SocialFakes::Catalog::load(m_options.socialOpenApiPath, error);
        if (!m_social)
            return false;
    }
    m_server->setListenBacklogSize(4096);
    if (!m_server->listen(m_options.address, m_options.port)) {
        *error = QStringLiteral("cannot listen on %1:%2: %3")
                     .arg(m_options.address.toString())
                     .arg(m_options.port)
                     .arg(m_server->errorString());
        return false;
    }
    return true;
}

quint16 FakeUpstream::port() const
{
    return m_server ? m_server->serverPort() : 0;
}

qint64 FakeUpstream::bodyLimit(const HttpRequest &) const
{
    return kBodyLimit;
}

void FakeUpstream::trackConnection(HttpConnection *connection)
{
    m_owners.insert(connection, {});
    connect(connection, &QObject::destroyed, this,
            [this, connection] { m_owners.remove(connection); });
}

// The connection that dispatched this exchange: the busy one whose last known exchange is over.
// Requests on one connection are answered strictly in order, so a connection still busy with
// a live unfinished exchange cannot be the one.
HttpConnection *FakeUpstream::claimConnection(const ExchangePtr &exchange)
{
    for (auto it = m_owners.begin(); it != m_owners.end(); ++it) {
        HttpConnection *connection = it.key();
        if (connection->isIdle())
            continue;
        const ExchangePtr owner = it.value().lock();
        if (owner == exchange)
            return connection;
        if (owner && (!owner->isAnswered() || owner->isStreaming()))
            continue;
        it.value() = exchange;
        return connection;
    }
    return nullptr;
}

void FakeUpstream::reject(const ExchangePtr &exchange, int status, const QString &message)
{
    exchange->respond(status, {{"content-type", "application/json"}},
                      errorBody(Protocol::Chat, status, message, {}));
}

void FakeUpstream::handle(const ExchangePtr &exchange)
{
    Context ctx;
    ctx.exchange = exchange;
    ctx.connection = claimConnection(exchange);
    const HttpRequest &request = exchange->request();
    if (request.path.startsWith(QLatin1String("/fake/"))) {
        handleControl(exchange);
        return;
    }
    ctx.seq = ++m_seq;
    ctx.requestId = fakeId("req_", ctx.seq);
    ++m_requests;
    ++m_byPath[request.path];
    writeLog(ctx.seq, request);

    // The social API's paths (and /openapi.json) first, so that a catalog path under /api/v1
    // is not taken for an OpenRouter-style alias; every other path keeps its meaning.
    if (m_social && SocialFakes::claims(*m_social, request.path)) {
        SocialFakes::answer(*this, m_options, *m_social, {exchange, ctx.connection, ctx.seq});
        return;
    }

    QString path = request.path;
    if (path == QLatin1String("/api/v1/models")) {
        handleModels(ctx, true);
        return;
    }
    // OpenRouter-style base URL: /api/v1/chat/completions is /v1/chat/completions.
    if (path.startsWith(QLatin1String("/api/v1/")))
        path = path.mid(4);
    if (path == QLatin1String("/v1/models")) {
        if (request.hasHeader("anthropic-version"))
            ctx.protocol = Protocol::Messages;
        handleModels(ctx, false);
        return;
    }
    // Every other endpoint takes POST.
    const bool transcription = path == QLatin1String("/v1/audio/transcriptions");
    const bool speech = path == QLatin1String("/v1/audio/speech");
    const bool images = path == QLatin1String("/v1/images/generations");
    const bool decisions = path == QLatin1String("/v1/decisions");
    ctx.fish = path == QLatin1String("/v1/tts");
    if (path == QLatin1String("/v1/chat/completions")) {
        ctx.protocol = Protocol::Chat;
    } else if (path == QLatin1String("/v1/responses")) {
        ctx.protocol = Protocol::Responses;
    } else if (path == QLatin1String("/v1/messages")) {
        ctx.protocol = Protocol::Messages;
    } else if (!transcription && !speech && !images && !decisions && !ctx.fish) {
        ctx.protocol =
            path.startsWith(QLatin1String("/v1/messages")) ? Protocol::Messages : Protocol::Chat;
        respondError(ctx, 404,
                     QStringLiteral("Unknown request URL: %1 %2.")
                         .arg(QString::fromLatin1(request.method), request.path));
        return;
    }
    if (request.method != "POST") {
        respondError(ctx, 405,
                     QStringLiteral("Method %1 is not allowed on %2; use POST.")
                         .arg(QString::fromLatin1(request.method), request.path));
        return;
    }
    if (transcription)
        handleTranscription(ctx);
    else if (speech)
        handleSpeech(ctx);
    else if (ctx.fish)
        handleFishTts(ctx);
    else if (images)
        handleImages(ctx);
    else if (decisions)
        handleDecisions(ctx);
    else
        handleGeneration(ctx);
}

bool FakeUpstream::authorize(Context &ctx)
{
    const HttpRequest &request = ctx.exchange->request();
    const bool checkKey = !m_options.requireKeys.isEmpty();
    QByteArray bearer;
    const QByteArray authorization = request.header("authorization");
    if (authorization.size() > 7 && authorization.left(7).toLower() == "bearer ")
        bearer = authorization.mid(7).trimmed();
    if (ctx.protocol == Protocol::Messages) {
        // SDK 0.x sends x-api-key; SDK 1.x sends the same key as Authorization: Bearer.
        ctx.key = request.header("x-api-key");
        const bool viaHeader = !ctx.key.isEmpty();
        if (!viaHeader)
            ctx.key = bearer;
        if (ctx.key.isEmpty()) {
            respondError(ctx, 401, QStringLiteral("x-api-key header is required"));
            return false;
        }
        if (checkKey && !m_options.requireKeys.contains(ctx.key)) {
            respondError(ctx, 401,
                         viaHeader ? QStringLiteral("invalid x-api-key")
                                   : QStringLiteral("invalid bearer token"));
            return false;
        }
        if (request.header("anthropic-version").isEmpty()) {
            respondError(ctx, 400, QStringLiteral("anthropic-version: header is required"));
            return false;
        }
        return true;
    }
    ctx.key = bearer;
    if (ctx.key.isEmpty()) {
        respondError(ctx, 401,
                     QStringLiteral("No API key was provided. Send it in the Authorization "
                                    "header as 'Bearer YOUR_KEY'."));
        return false;
    }
    if (checkKey && !m_options.requireKeys.contains(ctx.key)) {
        respondError(ctx, 401,
                     QStringLiteral("Incorrect API key provided: %1.")
                         .arg(QString::fromLatin1(mask(ctx.key))),
                     {}, "invalid_api_key");
        return false;
    }
    return true;
}

std::optional<RequestPlan>
FakeUpstream::makePlan(Context &ctx, const QHash<QString, QString> &directive, QString *error) const
{
    RequestPlan plan;
    plan.generation.chunks = m_options.chunks;
    plan.firstByteMs = m_options.firstByteMs;
    plan.intervalMs = m_options.intervalMs;
    QString faultText = m_options.fault;
    const auto keyFault = m_options.keyFaults.constFind(ctx.key);
    if (keyFault != m_options.keyFaults.cend())
        faultText = *keyFault;

    // The directive first, then the headers over it.
    QList<QPair<QString, QString>> settings;
    for (auto it = directive.cbegin(); it != directive.cend(); ++it)
        settings.append({it.key(), it.value()});
    for (const auto &h : ctx.exchange->request().headers)
        if (h.first.startsWith("x-fake-"))
            settings.append({QString::fromLatin1(h.first.mid(7)), QString::fromUtf8(h.second)});

    for (const auto &[name, value] : settings) {
        qint64 n = 0;
        auto bad = [&](const QString &expected) {
            *error = QStringLiteral("Invalid fake option %1=%2: expected %3.")
                         .arg(name, value, expected);
            return std::nullopt;
        };
        if (name == QLatin1String("chunks")) {
            if (!parseInt(value, 1, kMaxChunks, &n))
                return bad(QStringLiteral("an integer from 1 to %1").arg(kMaxChunks));
            plan.generation.chunks = int(n);
        } else if (name == QLatin1String("delay-ms")) {
            if (!parseInt(value, 0, kMaxDelayMs, &n))
                return bad(QStringLiteral("milliseconds"));
            plan.firstByteMs = int(n);
        } else if (name == QLatin1String("interval-ms")) {
            if (!parseInt(value, 0, kMaxDelayMs, &n))
                return bad(QStringLiteral("milliseconds"));
            plan.intervalMs = int(n);
        } else if (name == QLatin1String("fault")) {
            faultText = value;
        } else if (name == QLatin1String("tool")) {
            if (value == QLatin1String("1") || value == QLatin1String("true"))
                plan.generation.tool = 1;
            else if (value == QLatin1String("0") || value == QLatin1String("false"))
                plan.generation.tool = 0;
            else if (value == QLatin1String("auto"))
                plan.generation.tool = -1;
            else
                return bad(QStringLiteral("1, 0 or auto"));
        } else if (name == QLatin1String("cache-read")) {
            if (!parseInt(value, 0, std::numeric_limits<qint32>::max(), &n))
                return bad(QStringLiteral("a token count"));
            plan.generation.cacheRead = n;
        } else if (name == QLatin1String("cache-write")) {
            if (!parseInt(value, 0, std::numeric_limits<qint32>::max(), &n))
                return bad(QStringLiteral("a token count"));
            plan.generation.cacheWrite = n;
        } else if (name == QLatin1String("text")) {
            plan.generation.text = value;
        } else if (name == QLatin1String("images")) {
            if (!parseInt(value, 0, ImageFakes::kMaxImages, &n))
                return bad(
                    QStringLiteral("an image count from 0 to %1").arg(ImageFakes::kMaxImages));
            plan.images = int(n);
        } else if (name == QLatin1String("cost")) {
            if (value != QLatin1String("none") && !DecisionFakes::isDecimal(value))
                return bad(QStringLiteral("none or a decimal such as 0.000123"));
            plan.cost = value;
        } else if (name == QLatin1String("echo-key")) {
            ctx.echoKey = value == QLatin1String("1");
        } else if (name == QLatin1String("ignore-max-tokens")) {
            if (value == QLatin1String("1") || value == QLatin1String("true"))
                plan.generation.ignoreMaxTokens = true;
            else if (value == QLatin1String("0") || value == QLatin1String("false"))
                plan.generation.ignoreMaxTokens = false;
            else
                return bad(QStringLiteral("1 or 0"));
        } else if (name == QLatin1String("delta-usage")) {
            if (value == QLatin1String("full"))
                plan.generation.fullDeltaUsage = true;
            else if (value == QLatin1String("output"))
                plan.generation.fullDeltaUsage = false;
            else
                return bad(QStringLiteral("full or output"));
        } else {
            *error = QStringLiteral("Unknown fake option '%1' (known: %2).")
                         .arg(name, knownOptions().join(QLatin1String(", ")));
            return std::nullopt;
        }
    }
    const auto fault = Fault::parse(faultText);
    if (!fault) {
        *error = QStringLiteral("Invalid fault '%1' (known: none, 400-599, 429:SECONDS, "
                                "slow-first-byte[:MS], reset-mid-stream[:K], "
                                "stall-mid-stream[:K], error-mid-stream[:K], "
                                "malformed-json[:K], hang, reset).")
                     .arg(faultText);
        return std::nullopt;
    }
    plan.fault = *fault;
    if (plan.fault.kind == Fault::Kind::SlowFirstByte)
        plan.firstByteMs = plan.fault.value < 0 ? kDefaultSlowFirstByteMs : plan.fault.value;
    return plan;
}

std::optional<QJsonObject> FakeUpstream::jsonBody(Context &ctx)
{
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(ctx.exchange->request().body, &parseError);
    if (parseError.error == QJsonParseError::NoError && doc.isObject())
        return doc.object();
    respondError(ctx, 400,
                 (ctx.protocol == Protocol::Messages
                      ? QStringLiteral("The request body is not a valid JSON object (%1).")
                      : QStringLiteral("We could not parse the JSON body of your request (%1)."))
                     .arg(parseError.errorString()));
    return std::nullopt;
}

void FakeUpstream::handleGeneration(Context &ctx)
{
    if (!authorize(ctx))
        return;
    const auto body = jsonBody(ctx);
    if (!body)
        return;
    ctx.body = *body;
    const bool anthropic = ctx.protocol == Protocol::Messages;
    const QJsonValue model = ctx.body.value(QLatin1String("model"));
    if (!model.isString() || model.toString().isEmpty()) {
        respondError(ctx, 400,
                     anthropic ? QStringLiteral("model: Field required")
                               : QStringLiteral("You must provide a model parameter."),
                     "model");
        return;
    }
    if (ctx.protocol != Protocol::Responses) {
        const QJsonValue messages = ctx.body.value(QLatin1String("messages"));
        if (!messages.isArray() || messages.toArray().isEmpty()) {
            respondError(ctx, 400,
                         anthropic ? QStringLiteral("messages: Field required")
                                   : QStringLiteral("'messages' must be a non-empty array."),
                         "messages");
            return;
        }
    }
    if (anthropic) {
        const QJsonValue maxTokens = ctx.body.value(QLatin1String("max_tokens"));
        if (!maxTokens.isDouble() || maxTokens.toDouble() < 1 ||
            maxTokens.toDouble() != double(qint64(maxTokens.toDouble()))) {
            respondError(ctx, 400,
                         maxTokens.isUndefined()
                             ? QStringLiteral("max_tokens: Field required")
                             : QStringLiteral("max_tokens: must be a positive integer"));
            return;
        }
    }
    ctx.stream = ctx.body.value(QLatin1String("stream")).toBool();

    QString error;
    const auto plan = makePlan(ctx, parseDirective(lastUserText(ctx.protocol, ctx.body)), &error);
    if (!plan) {
        respondError(ctx, 400, error);
        return;
    }
    if (applyEarlyFault(ctx, *plan, ctx.stream))
        return;

    Generation generation = makeGeneration(ctx.protocol, ctx.body, plan->generation, ctx.seq,
                                           QDateTime::currentSecsSinceEpoch(), false);
    auto writer = ProtocolWriter::create(std::move(generation));
    if (!ctx.stream) {
        // A whole answer arrives when the last piece would have been generated.
        const qint64 pieces = writer->generation().pieces.size();
        const qint64 delay = plan->firstByteMs + qMax<qint64>(0, pieces - 1) * plan->intervalMs;
        RequestPlan timed = *plan;
        timed.firstByteMs = int(qMin<qint64>(delay, kMaxDelayMs));
        respondPlanned(ctx, timed, writer->body());
        return;
    }
    auto *job = new FakeJob(*this, ctx.exchange, ctx.connection, true, FakeJob::Mode::Stream);
    job->setStream(std::move(writer), streamHeaders(ctx), plan->intervalMs);
    job->setFault(plan->fault);
    job->start(plan->firstByteMs);
}

void FakeUpstream::handleModels(Context &ctx, bool catalog)
{
    const HttpRequest &request = ctx.exchange->request();
    if (request.method != "GET") {
        respondError(ctx, 405,
                     QStringLiteral("Method %1 is not allowed on %2; use GET.")
                         .arg(QString::fromLatin1(request.method), request.path));
        return;
    }
    // The OpenRouter catalog is public; /v1/models needs a key like the real services.
    if (!catalog && !authorize(ctx))
        return;
    QString error;
    const auto plan = makePlan(ctx, {}, &error);
    if (!plan) {
        respondError(ctx, 400, error);
        return;
    }
    if (applyEarlyFault(ctx, *plan, false))
        return;
    respondPlanned(ctx, *plan,
                   catalog ? catalogJson() : modelsJson(ctx.protocol == Protocol::Messages));
}

bool FakeUpstream::planFromText(Context &ctx, const QString &directiveText, RequestPlan *plan)
{
    QString error;
    const auto p = makePlan(ctx, parseDirective(directiveText), &error);
    if (!p) {
        respondError(ctx, 400, error);
        return false;
    }
    if (applyEarlyFault(ctx, *p, false))
        return false;
    *plan = *p;
    return true;
}

// POST /v1/audio/transcriptions: OpenAI's multipart form, checked as OpenAI checks it; the
// transcript says what arrived (duration, file type, language, prompt, temperature).
void FakeUpstream::handleTranscription(Context &ctx)
{
    if (!authorize(ctx))
        return;
    const HttpRequest &request = ctx.exchange->request();
    QString error;
    const auto boundary = multipartBoundary(request.header("content-type"), &error);
    if (!boundary) {
        respondError(ctx, 400,
                     QStringLiteral("Invalid Content-Type header (%1); this endpoint takes "
                                    "multipart/form-data.")
                         .arg(error));
        return;
    }
    MultipartLimits limits;
    limits.maxFileBytes = 25 * 1024 * 1024;
    const MultipartForm form = parseMultipart(request.body, *boundary, limits);
    if (form.error) {
        respondError(ctx, form.error->status, form.error->message, form.error->param.toUtf8());
        return;
    }
    auto text = [&](const char *name) {
        const MultipartPart *p = form.part(name);
        return p ? QString::fromUtf8(p->data) : QString();
    };
    const MultipartPart *file = form.part("file");
    if (!file || !file->hasFilename) {
        respondError(ctx, 400,
                     QStringLiteral("1 validation error for Request\nbody -> file\n  field "
                                    "required (type=value_error.missing)"));
        return;
    }
    const QString model = text("model");
    if (model.isEmpty()) {
        respondError(ctx, 400, QStringLiteral("you must provide a model parameter"), "model");
        return;
    }
    const QString format =
        text("response_format").isEmpty() ? QStringLiteral("json") : text("response_format");
    static const QStringList formats{"json", "text", "srt", "verbose_json", "vtt"};
    if (!formats.contains(format)) {
        respondError(ctx, 400,
                     QStringLiteral("Invalid value: '%1'. Supported values are: 'json', 'text', "
                                    "'srt', 'verbose_json', and 'vtt'.")
                         .arg(format),
                     "response_format", "invalid_value");
        return;
    }
    bool words = false;
    bool segments = false;
    int granularities = 0;
    for (const MultipartPart &p : form.parts) {
        if (p.name != "timestamp_granularities[]")
            continue;
        ++granularities;
        if (p.data == "word")
            words = true;
        else if (p.data == "segment")
            segments = true;
        else {
            respondError(ctx, 400,
                         QStringLiteral("Invalid value: '%1'. Supported values are: 'word' and "
                                        "'segment'.")
                             .arg(QString::fromUtf8(p.data)),
                         "timestamp_granularities", "invalid_value");
            return;
        }
    }
    if (granularities && format != QLatin1String("verbose_json")) {
        respondError(ctx, 400,
                     QStringLiteral("timestamp_granularities is only supported with "
                                    "response_format=verbose_json."),
                     "timestamp_granularities");
        return;
    }
    if (!granularities)
        segments = true;
    const QString temperature = text("temperature");
    if (!temperature.isEmpty()) {
        bool ok = false;
        const double t = temperature.toDouble(&ok);
        if (!ok || t < 0 || t > 1) {
            respondError(ctx, 400,
                         QStringLiteral("Invalid 'temperature': expected a number from 0 to 1."),
                         "temperature", "invalid_value");
            return;
        }
    }
    auto decoder = AudioDecoder::fromBytes(file->data);
    if (!decoder->open()) {
        respondError(ctx, 400,
                     QStringLiteral("Invalid file format. Supported formats: ['flac', 'm4a', "
                                    "'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', "
                                    "'webm']"),
                     "file", "invalid_value");
        return;
    }
    double seconds = decoder->statedDuration();
    if (seconds < 0)
        seconds = decoder->measureDuration();
    if (seconds < 0.1) {
        respondError(ctx, 400,
                     QStringLiteral("Audio file is too short. Minimum audio length is 0.1 "
                                    "seconds."),
                     "file", "audio_too_short");
        return;
    }
    const QString prompt = text("prompt");
    RequestPlan plan;
    if (!planFromText(ctx, prompt, &plan))
        return;
    AudioFakes::Heard heard;
    heard.seconds = seconds;
    const QString name = QString::fromUtf8(file->filename);
    heard.extension =
        name.contains(QLatin1Char('.')) ? name.section(QLatin1Char('.'), -1) : QString();
    heard.bytes = file->data.size();
    heard.language = text("language");
    heard.prompt = prompt;
    heard.temperature = temperature;
    QByteArray type;
    const QByteArray body = AudioFakes::transcription(
        format, AudioFakes::transcriptText(heard), seconds, heard.language, words, segments, &type);
    respondPlanned(ctx, plan, body, {{"content-type", type}, {"x-request-id", ctx.requestId}});
}

// POST /v1/audio/speech: OpenAI's JSON; wav (streamed header) or pcm at 24 kHz mono.
void FakeUpstream::handleSpeech(Context &ctx)
{
    if (!authorize(ctx))
        return;
    const auto parsed = jsonBody(ctx);
    if (!parsed)
        return;
    const QJsonObject &body = *parsed;
    if (body.value("model").toString().isEmpty()) {
        respondError(ctx, 400, QStringLiteral("you must provide a model parameter"), "model");
        return;
    }
    const QJsonValue input = body.value("input");
    if (!input.isString() || input.toString().isEmpty()) {
        respondError(ctx, 400, QStringLiteral("'input' is a required property"), "input");
        return;
    }
    if (input.toString().size() > 4096) {
        respondError(ctx, 400,
                     QStringLiteral("Invalid 'input': string too long. Expected a string with "
                                    "maximum length 4096, but got a string with length %1 "
                                    "instead.")
                         .arg(input.toString().size()),
                     "input", "string_above_max_length");
        return;
    }
    const QString voice = body.value("voice").toString();
    if (!AudioFakes::openAiVoices().contains(voice)) {
        respondError(ctx, 400,
                     QStringLiteral("Invalid value: '%1'. Supported values are: %2.")
                         .arg(voice, AudioFakes::openAiVoices().join(QStringLiteral(", "))),
                     "voice", "invalid_value");
        return;
    }
    const QString format = body.value("response_format").toString(QStringLiteral("mp3"));
    if (format != QLatin1String("wav") && format != QLatin1String("pcm")) {
        respondError(
            ctx, 400,
            QStringLiteral("The fake upstream speaks only wav and pcm, not '%1'.").arg(format),
            "response_format", "invalid_value");
        return;
    }
    const double speed = body.value("speed").toDouble(1.0);
    if (speed < 0.25 || speed > 4.0) {
        respondError(ctx, 400,
                     QStringLiteral("Invalid 'speed': expected a number from 0.25 to 4.0."),
                     "speed", "invalid_value");
        return;
    }
    RequestPlan plan;
    if (!planFromText(ctx, input.toString(), &plan))
        return;
    const QByteArray pcm = AudioFakes::speechPcm(input.toString(), AudioFakes::kOpenAiRate, speed);
    const bool wav = format == QLatin1String("wav");
    respondPlanned(
        ctx, plan, wav ? AudioFakes::wav(AudioFakes::kOpenAiRate, 1, pcm, true) : pcm,
        {{"content-type", wav ? "audio/wav" : "audio/pcm"}, {"x-request-id", ctx.requestId}});
}

// POST /v1/tts: fish-speech's ServeTTSRequest as JSON (the server also takes msgpack; the fake
// takes what Switchyard sends). Each reference must carry audio that decodes.
void FakeUpstream::handleFishTts(Context &ctx)
{
    const HttpRequest &request = ctx.exchange->request();
    QByteArray bearer;
    const QByteArray authorization = request.header("authorization");
    if (authorization.size() > 7 && authorization.left(7).toLower() == "bearer ")
        bearer = authorization.mid(7).trimmed();
    ctx.key = bearer;
    if (!m_options.requireKeys.isEmpty() && !m_options.requireKeys.contains(bearer)) {
        respondError(ctx, 401, QStringLiteral("Invalid token"));
        return;
    }
    const QByteArray type = request.header("content-type").split(';').value(0).trimmed();
    if (type != "application/json") {
        respondError(ctx, 415,
                     QStringLiteral("The fake fish-speech takes application/json (the real one "
                                    "also takes application/msgpack), not '%1'.")
                         .arg(QString::fromUtf8(type)));
        return;
    }
    const QJsonObject body = QJsonDocument::fromJson(request.body).object();
    auto invalid = [&](const QString &message) { respondError(ctx, 422, message); };
    if (!body.value("text").isString())
        return invalid(QStringLiteral("text: Field required"));
    const QString format = body.value("format").toString(QStringLiteral("wav"));
    if (format != QLatin1String("wav") && format != QLatin1String("pcm"))
        return invalid(QStringLiteral("format: the fake fish-speech answers wav or pcm"));
    if (body.value("streaming").toBool())
        return invalid(QStringLiteral("streaming: the fake fish-speech answers whole files"));
    const QJsonValue references = body.value("references");
    if (!references.isUndefined() && !references.isArray())
        return invalid(QStringLiteral("references: Input should be a valid list"));
    const QJsonArray refs = references.toArray();
    for (qsizetype i = 0; i < refs.size(); ++i) {
        const QJsonObject r = refs.at(i).toObject();
        const QString where = QStringLiteral("references.%1").arg(i);
        if (!r.value("text").isString())
            return invalid(where + QStringLiteral(".text: Field required"));
        const QString audio = r.value("audio").toString();
        // ServeReferenceAudio decodes base64 only from strings longer than 255 characters.
        const auto decoded = QByteArray::fromBase64Encoding(
            audio.toLatin1(), QByteArray::AbortOnBase64DecodingErrors);
        if (audio.size() <= 255 || !decoded)
            return invalid(where + QStringLiteral(".audio: expected base64-encoded audio"));
        auto decoder = AudioDecoder::fromBytes(*decoded);
        if (!decoder->open()) {
            respondError(ctx, 500, QStringLiteral("Failed to generate speech"));
            return;
        }
    }
    RequestPlan plan;
    if (!planFromText(ctx, body.value("text").toString(), &plan))
        return;
    const QByteArray pcm =
        AudioFakes::speechPcm(body.value("text").toString(), AudioFakes::kFishRate);
    const bool wav = format == QLatin1String("wav");
    respondPlanned(ctx, plan, wav ? AudioFakes::wav(AudioFakes::kFishRate, 1, pcm, false) : pcm,
                   {{"content-type", wav ? "audio/wav" : "application/octet-stream"},
                    {"content-disposition", "attachment; filename=audio." + format.toLatin1()},
                    {"x-fake-references", QByteArray::number(refs.size())}});
}

// POST /v1/images/generations: OpenAI's JSON, checked as OpenAI checks it; PNG files of the
// asked size, inline (b64_json) or served by the fake itself (url).
void FakeUpstream::handleImages(Context &ctx)
{
    if (!authorize(ctx))
        return;
    const auto body = jsonBody(ctx);
    if (!body)
        return;
    ImageFakes::Request asked;
    if (const auto invalid = ImageFakes::parseRequest(*body, &asked)) {
        respondError(ctx, 400, invalid->message, invalid->param, invalid->code);
        return;
    }
    RequestPlan plan;
    if (!planFromText(ctx, asked.prompt, &plan))
        return;
    const int count = plan.images < 0 ? asked.n : qMin(asked.n, plan.images);
    const QByteArray base = "http://" + m_server->serverAddress().toString().toLatin1() + ':' +
                            QByteArray::number(port()) + "/fake/images/";
    Json data = Json::array();
    for (int i = 0; i < count; ++i) {
        const QByteArray file = ImageFakes::png(asked.width, asked.height, asked.prompt, i);
        Json item = Json::object();
        if (asked.b64Json) {
            item.add("b64_json", file.toBase64());
        } else {
            const QByteArray id = fakeId("img-", ctx.seq) + '-' + QByteArray::number(i);
            m_images.put(id, file);
            item.add("url", base + id + ".png");
        }
        item.add("revised_prompt", asked.prompt);
        data.push(std::move(item));
    }
    respondPlanned(ctx, plan,
                   Json::object()
                       .add("created", QDateTime::currentSecsSinceEpoch())
                       .add("data", std::move(data))
                       .toJson());
}

// POST /v1/decisions (and /api/v1/decisions): OpenRouter-style typed decision evaluation; the
// answers derive from a hash of the state text and the question id, the directive is read from
// the state text.
void FakeUpstream::handleDecisions(Context &ctx)
{
    if (!authorize(ctx))
        return;
    const auto body = jsonBody(ctx);
    if (!body)
        return;
    DecisionFakes::Request asked;
    if (const auto invalid = DecisionFakes::parseRequest(*body, &asked)) {
        respondError(ctx, 400, invalid->message, invalid->param, invalid->code);
        return;
    }
    RequestPlan plan;
    if (!planFromText(ctx, asked.stateText, &plan))
        return;
    const QByteArray id = "dec-" + QByteArray::number(ctx.seq, 16).rightJustified(16, '0');
    respondPlanned(
        ctx, plan,
        DecisionFakes::responseBody(asked, id, ctx.exchange->request().body.size(), plan.cost));
}

// GET /fake/images/<id>.png: an image of a url answer, while it is among the last stored.
void FakeUpstream::serveImage(const ExchangePtr &exchange)
{
    const HttpRequest &request = exchange->request();
    const QString name = request.path.mid(QLatin1String("/fake/images/").size());
    const QByteArray file = name.endsWith(QLatin1String(".png"))
                                ? m_images.get(name.chopped(4).toLatin1())
                                : QByteArray();
    if (file.isEmpty()) {
        exchange->respond(
            404, {{"content-type", "application/json"}},
            errorBody(Protocol::Chat, 404,
                      QStringLiteral("No image %1 (unknown, or older than the last "
                                     "%2).")
                          .arg(request.path, QString::number(ImageFakes::kStoredImages)),
                      {}));
        return;
    }
    ++m_imageFetches;
    exchange->respond(200, {{"content-type", "image/png"}}, file);
}

bool FakeUpstream::applyEarlyFault(Context &ctx, const RequestPlan &plan, bool stream)
{
    switch (plan.fault.kind) {
    case Fault::Kind::Reset: {
        QPointer<HttpConnection> connection = ctx.connection;
        if (!connection) {
            respondError(ctx, 500,
                         QStringLiteral("fake upstream: cannot find the connection "
                                        "to reset"));
            return true;
        }
        ++m_faulted;
        QTimer::singleShot(0, this, [connection] {
            if (connection)
                resetConnection(connection);
        });
        return true;
    }
    case Fault::Kind::Hang: {
        auto *job = new FakeJob(*this, ctx.exchange, ctx.connection, stream, FakeJob::Mode::Hang);
        job->start(0);
        return true;
    }
    case Fault::Kind::Status: {
        const int status = plan.fault.value;
        HttpHeaders headers = jsonHeaders(ctx);
        if (status == 429)
            headers.append({"retry-after", QByteArray::number(plan.fault.retryAfter)});
        auto *job =
            new FakeJob(*this, ctx.exchange, ctx.connection, stream, FakeJob::Mode::Respond);
        QString message = statusMessage(status);
        if (ctx.echoKey)
            message += QStringLiteral(" (key %1)").arg(QString::fromUtf8(ctx.key));
        job->setResponse(status, headers, errorPayload(ctx, status, message));
        job->start(plan.firstByteMs);
        return true;
    }
    default:
        return false;
    }
}

void FakeUpstream::respondPlanned(Context &ctx, const RequestPlan &plan, const QByteArray &body,
                                  const HttpHeaders &headers)
{
    auto *job =
        new FakeJob(*this, ctx.exchange, ctx.connection, ctx.stream, FakeJob::Mode::Respond);
    job->setResponse(200, headers.isEmpty() ? jsonHeaders(ctx) : headers, body);
    job->setFault(plan.fault);
    job->start(plan.firstByteMs);
}

void FakeUpstream::respondNow(Context &ctx, int status, const QByteArray &body,
                              const HttpHeaders &extra)
{
    HttpHeaders headers = jsonHeaders(ctx);
    headers += extra;
    ctx.exchange->respond(status, headers, body);
}

void FakeUpstream::respondError(Context &ctx, int status, const QString &message,
                                const QByteArray &param, const QByteArray &code)
{
    respondNow(ctx, status, errorPayload(ctx, status, message, param, code));
}

QByteArray FakeUpstream::errorPayload(const Context &ctx, int status, const QString &message,
                                      const QByteArray &param, const QByteArray &code) const
{
    if (!ctx.fish)
        return errorBody(ctx.protocol, status, message, ctx.requestId, param, code);
    // fish-speech's ExceptionHandler (tools/server/exception_handler.py).
    static const QHash<int, const char *> phrases{{400, "Bad Request"},
                                                  {401, "Unauthorized"},
                                                  {404, "Not Found"},
                                                  {405, "Method Not Allowed"},
                                                  {415, "Unsupported Media Type"},
                                                  {422, "Unprocessable Entity"},
                                                  {429, "Too Many Requests"},
                                                  {500, "Internal Server Error"},
                                                  {502, "Bad Gateway"},
                                                  {503, "Service Unavailable"},
                                                  {504, "Gateway Timeout"}};
    return Json::object()
        .add("statusCode", status)
        .add("message", message)
        .add("error", phrases.value(status, "Error"))
        .toJson();
}

HttpHeaders FakeUpstream::jsonHeaders(const Context &ctx) const
{
    return {{"content-type", "application/json"},
            {ctx.protocol == Protocol::Messages ? "request-id" : "x-request-id", ctx.requestId}};
}

HttpHeaders FakeUpstream::streamHeaders(const Context &ctx) const
{
    return {{"content-type", "text/event-stream; charset=utf-8"},
            {"cache-control", "no-cache"},
            {ctx.protocol == Protocol::Messages ? "request-id" : "x-request-id", ctx.requestId}};
}

QByteArray FakeUpstream::catalogJson() const
{
    if (!m_catalogFile.isEmpty())
        return m_catalogFile;
    Json data = Json::array();
    for (const CatalogEntry &m : kCatalog) {
        Json pricing = Json::object()
                           .add("prompt", m.prompt)
                           .add("completion", m.completion)
                           .add("request", "0")
                           .add("image", "0")
                           .add("web_search", "0")
                           .add("internal_reasoning", "0");
        if (m.cacheRead)
            pricing.add("input_cache_read", m.cacheRead);
        if (m.cacheWrite)
            pricing.add("input_cache_write", m.cacheWrite);
        data.push(Json::object()
                      .add("id", m.id)
                      .add("canonical_slug", m.id)
                      .add("hugging_face_id", "")
                      .add("name", m.name)
                      .add("created", kCatalogCreated)
                      .add("description", "A deterministic model served by the fake upstream.")
                      .add("context_length", m.contextLength)
                      .add("architecture", Json::object()
                                               .add("modality", "text->text")
                                               .add("input_modalities", Json::array().push("text"))
                                               .add("output_modalities", Json::array().push("text"))
                                               .add("tokenizer", "Other")
                                               .add("instruct_type", nullptr))
                      .add("pricing", std::move(pricing))
                      .add("top_provider", Json::object()
                                               .add("context_length", m.contextLength)
                                               .add("max_completion_tokens", 8192)
                                               .add("is_moderated", false))
                      .add("per_request_limits", nullptr)
                      .add("supported_parameters", Json::array()
                                                       .push("max_tokens")
                                                       .push("temperature")
                                                       .push("top_p")
                                                       .push("stop")
                                                       .push("tools")
                                                       .push("tool_choice")
                                                       .push("response_format")));
    }
    return Json::object().add("data", std::move(data)).toJson();
}

QByteArray FakeUpstream::modelsJson(bool anthropic) const
{
    const QJsonArray catalog =
        QJsonDocument::fromJson(catalogJson()).object().value(QLatin1String("data")).toArray();
    Json data = Json::array();
    QString first;
    QString last;
    for (const QJsonValue &value : catalog) {
        const QJsonObject entry = value.toObject();
        const QString full = entry.value(QLatin1String("id")).toString();
        const qsizetype slash = full.indexOf(QLatin1Char('/'));
        const QString id = full.mid(slash + 1);
        const QString owner = slash > 0 ? full.left(slash) : QStringLiteral("fake");
        if (first.isEmpty())
            first = id;
        last = id;
        if (anthropic)
            data.push(Json::object()
                          .add("type", "model")
                          .add("id", id)
                          .add("display_name", entry.value(QLatin1String("name")).toString())
                          .add("created_at", "2023-11-14T22:13:20Z"));
        else
            data.push(Json::object()
                          .add("id", id)
                          .add("object", "model")
                          .add("created", kCatalogCreated)
                          .add("owned_by", owner));
    }
    if (anthropic)
        return Json::object()
            .add("data", std::move(data))
            .add("has_more", false)
            .add("first_id", first.isEmpty() ? Json() : Json(first))
            .add("last_id", last.isEmpty() ? Json() : Json(last))
            .toJson();
    return Json::object().add("object", "list").add("data", std::move(data)).toJson();
}

void FakeUpstream::handleControl(const ExchangePtr &exchange)
{
    const HttpRequest &request = exchange->request();
    const HttpHeaders headers{{"content-type", "application/json"}};
    if (request.path.startsWith(QLatin1String("/fake/images/")) && request.method == "GET") {
        serveImage(exchange);
    } else if (request.path == QLatin1String("/fake/stats") && request.method == "GET") {
        exchange->respond(200, headers, statsJson());
    } else if (request.path == QLatin1String("/fake/redirect") && request.method == "GET") {
        // A link shortener: 302 (or ?status=) to ?to=, for tests of short-link resolution.
        const QString to = request.query.queryItemValue(QStringLiteral("to"), QUrl::FullyDecoded);
        const int status = request.query.queryItemValue(QStringLiteral("status")).toInt();
        exchange->respond(status >= 300 && status <= 399 ? status : 302,
                          {{"location", to.toUtf8()}, {"content-type", "text/plain"}},
                          "redirecting\n");
    } else if (request.path == QLatin1String("/fake/reset") && request.method == "POST") {
        m_requests = m_completed = m_cancelled = m_faulted = m_imageFetches = 0;
        m_byPath.clear();
        m_maxOpenStreams = m_openStreams;
        m_maxOpenRequests = m_openRequests;
        exchange->respond(200, headers, statsJson());
    } else {
        exchange->respond(
            404, headers,
            errorBody(Protocol::Chat, 404,
                      QStringLiteral(
                          "Unknown control URL: %1 %2 (GET /fake/stats, "
                          "POST /fake/reset, GET /fake/images/ID.png, GET /fake/redirect?to=).")
                          .arg(QString::fromLatin1(request.method), request.path),
                      {}));
    }
}

QByteArray FakeUpstream::statsJson() const
{
    Json byPath = Json::object();
    for (auto it = m_byPath.cbegin(); it != m_byPath.cend(); ++it)
        byPath.add(it.key().toUtf8().constData(), it.value());
    return Json::object()
        .add("open_streams", m_openStreams)
        .add("max_open_streams", m_maxOpenStreams)
        .add("open_requests", m_openRequests)
        .add("max_open_requests", m_maxOpenRequests)
        .add("requests", m_requests)
        .add("completed", m_completed)
        .add("cancelled", m_cancelled)
        .add("faulted", m_faulted)
        .add("image_fetches", m_imageFetches)
        .add("connections", qint64(m_owners.size()))
        .add("by_path", std::move(byPath))
        .toJson();
}

void FakeUpstream::writeLog(quint64 seq, const HttpRequest &request)
{
    if (!m_log.isOpen())
        return;
    Json headers = Json::object();
    QList<QByteArray> seen;
    for (const auto &h : request.headers) {
        if (seen.contains(h.first))
            continue;
        seen.append(h.first);
        QByteArray value;
        for (const auto &other : request.headers) {
            if (other.first != h.first)
                continue;
            if (!value.isEmpty())
                value += ", ";
            value += maskHeader(other.first, other.second);
        }
        headers.add(h.first.constData(), value);
    }
    QByteArray line = Json::object()
                          .add("seq", seq)
                          .add("time", QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs))
                          .add("method", request.method)
                          .add("path", request.path)
                          .add("target", request.target)
                          .add("headers", std::move(headers))
                          .add("body", QString::fromUtf8(request.body))
                          .toJson();
    line += '\n';
    m_log.write(line);
    m_log.flush();
}

void FakeUpstream::jobStarted(bool stream)
{
    ++m_openRequests;
    m_maxOpenRequests = qMax(m_maxOpenRequests, m_openRequests);
    if (stream) {
        ++m_openStreams;
        m_maxOpenStreams = qMax(m_maxOpenStreams, m_openStreams);
    }
}

void FakeUpstream::jobEnded(bool stream, JobEnd how)
{
    --m_openRequests;
    if (stream)
        --m_openStreams;
    switch (how) {
    case JobEnd::Completed:
        ++m_completed;
        break;
    case JobEnd::Cancelled:
        ++m_cancelled;
        break;
    case JobEnd::Faulted:
        ++m_faulted;
        break;
    }
}

void FakeUpstream::resetConnection(HttpConnection *connection)
{
    if (!connection)
        return;
    auto *socket = connection->findChild<QTcpSocket *>(QString(), Qt::FindDirectChildrenOnly);
    if (!socket)
        return;
    socket->flush();
    const qintptr fd = socket->socketDescriptor();
    if (fd >= 0) {
        // Linger 0: close() sends RST instead of FIN.
        const linger hard{1, 0};
        ::setsockopt(int(fd), SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    }
    socket->abort();
}

// ------------------------------------------------------------------------------------ FakeJob

FakeJob::FakeJob(FakeUpstream &owner, ExchangePtr exchange, HttpConnection *connection, bool stream,
                 Mode mode)
    : QObject(&owner), m_owner(owner), m_exchange(std::move(exchange)), m_connection(connection),
      m_stream(stream), m_mode(mode)
{
    m_timer.setSingleShot(true);
    m_timer.setTimerType(Qt::PreciseTimer);
    m_owner.jobStarted(m_stream);
}

FakeJob::~FakeJob() = default;

void FakeJob::setResponse(int status, HttpHeaders headers, QByteArray body)
{
    m_status = status;
    m_headers = std::move(headers);
    m_body = std::move(body);
}

void FakeJob::setStream(std::unique_ptr<ProtocolWriter> writer, HttpHeaders headers, int intervalMs)
{
    m_writer = std::move(writer);
    m_headers = std::move(headers);
    m_intervalMs = intervalMs;
}

void FakeJob::setFault(const Fault &fault)
{
    m_fault = fault;
}

void FakeJob::start(int firstByteMs)
{
    QPointer<FakeJob> self(this);
    m_exchange->onClosed([self] {
        if (self)
            self->clientGone();
    });
    if (!m_exchange->isOpen()) {
        end(FakeUpstream::JobEnd::Cancelled);
        return;
    }
    if (m_mode == Mode::Hang)
        return;
    if (firstByteMs <= 0) {
        begin();
        return;
    }
    connect(&m_timer, &QTimer::timeout, this, &FakeJob::begin, Qt::SingleShotConnection);
    m_timer.start(firstByteMs);
}

void FakeJob::begin()
{
    if (m_ended)
        return;
    if (m_mode == Mode::Respond) {
        switch (m_fault.kind) {
        case Fault::Kind::MalformedJson:
            m_exchange->respond(m_status, m_headers, m_body.left(m_body.size() / 2));
            end(FakeUpstream::JobEnd::Completed);
            return;
        case Fault::Kind::ResetMidStream:
        case Fault::Kind::StallMidStream:
            // Half of the body, then the fault.
            m_exchange->startStream(m_status, m_headers);
            m_exchange->writeChunk(m_body.left(m_body.size() / 2));
            midStreamFault();
            return;
        default:
            m_exchange->respond(m_status, m_headers, m_body);
            end(FakeUpstream::JobEnd::Completed);
            return;
        }
    }
    const int pieces = int(m_writer->generation().pieces.size());
    if (isMidStream(m_fault.kind))
        m_faultAt = m_fault.value < 0 ? qMax(1, pieces / 2) : qMin(m_fault.value, pieces);
    else if (m_fault.kind == Fault::Kind::MalformedJson)
        m_faultAt = m_fault.value < 0 ? pieces / 2 : qMin(m_fault.value, pieces - 1);
    m_exchange->startStream(200, m_headers);
    for (const QByteArray &event : m_writer->preamble())
        write(event);
    connect(&m_timer, &QTimer::timeout, this, &FakeJob::step);
    step();
}

void FakeJob::step()
{
    const int pieces = int(m_writer->generation().pieces.size());
    while (!m_ended) {
        if (m_next == m_faultAt && isMidStream(m_fault.kind)) {
            midStreamFault();
            return;
        }
        if (m_next >= pieces) {
            for (const QByteArray &event : m_writer->epilogue())
                write(event);
            m_exchange->endStream();
            end(FakeUpstream::JobEnd::Completed);
            return;
        }
        const bool broken = m_fault.kind == Fault::Kind::MalformedJson && m_next == m_faultAt;
        write(broken ? m_writer->brokenPiece(m_next) : m_writer->piece(m_next));
        ++m_next;
        if (m_intervalMs > 0 && m_next < pieces) {
            m_timer.start(m_intervalMs);
            return;
        }
    }
}

void FakeJob::midStreamFault()
{
    switch (m_fault.kind) {
    case Fault::Kind::ResetMidStream:
        m_resetting = true;
        m_timer.disconnect(this);
        connect(&m_timer, &QTimer::timeout, this, [this] {
            FakeUpstream::resetConnection(m_connection);
            // Normally the reset has already ended the job through onClosed.
            end(FakeUpstream::JobEnd::Faulted);
        });
        m_timer.start(qMax(m_intervalMs, kResetGraceMinMs));
        return;
    case Fault::Kind::ErrorMidStream:
        write(m_writer->errorEvent(
            QStringLiteral("The upstream failed while generating (injected by the fake "
                           "upstream).")));
        m_exchange->endStream();
        end(FakeUpstream::JobEnd::Completed);
        return;
    default: // stall: wait for the client to give up
        return;
    }
}

void FakeJob::write(const QByteArray &event)
{
    m_exchange->writeChunk(event);
}

void FakeJob::clientGone()
{
    end(m_resetting ? FakeUpstream::JobEnd::Faulted : FakeUpstream::JobEnd::Cancelled);
}

void FakeJob::end(FakeUpstream::JobEnd how)
{
    if (m_ended)
        return;
    m_ended = true;
    m_timer.stop();
    m_exchange->onClosed(nullptr);
    m_owner.jobEnded(m_stream, how);
    deleteLater();
}
