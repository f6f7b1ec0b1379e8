// fake_upstream: a deterministic stand-in for the OpenAI, Anthropic and OpenRouter APIs (and,
// with --social-openapi, a TikHub-style social-media data API), for the gateway's tests and
// benchmarks. See README.md in this folder for the protocol details.

#include "FakeUpstream.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QSocketNotifier>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

int g_signalPipe[2] = {-1, -1};

void onSignal(int)
{
    const char c = 1;
    [[maybe_unused]] const ssize_t n = ::write(g_signalPipe[1], &c, 1);
}

// A thousand open streams need more descriptors than the usual soft limit of 1024.
void raiseFileLimit()
{
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
}

bool parseListen(const QString &text, QHostAddress *address, quint16 *port, QString *error)
{
    const qsizetype colon = text.lastIndexOf(QLatin1Char(':'));
    if (colon <= 0) {
        *error = QStringLiteral("--listen takes HOST:PORT, e.g. 127.0.0.1:0");
        return false;
    }
    const QString host = text.left(colon);
    bool ok = false;
    const uint p = text.mid(colon + 1).toUInt(&ok);
    if (!ok || p > 65535) {
        *error = QStringLiteral("invalid port in --listen %1").arg(text);
        return false;
    }
    const QHostAddress a = host == QLatin1String("localhost")
                               ? QHostAddress(QHostAddress::LocalHost)
                               : QHostAddress(host);
    // Loopback only: this program has no business on a real network.
    if (a.protocol() != QAbstractSocket::IPv4Protocol || !a.isLoopback()) {
        *error = QStringLiteral("--listen must be an IPv4 loopback address (127.0.0.1), got %1")
                     .arg(host);
        return false;
    }
    *address = a;
    *port = quint16(p);
    return true;
}

bool parseCount(const QCommandLineParser &parser, const QString &name, int min, int max, int *out)
{
    if (!parser.isSet(name))
        return true;
    bool ok = false;
    const int v = parser.value(name).toInt(&ok);
    if (!ok || v < min || v > max) {
        std::fprintf(stderr, "fake_upstream: --%s must be an integer from %d to %d\n",
                     qPrintable(name), min, max);
        return false;
    }
    *out = v;
    return true;
}

} // namespace

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("fake_upstream"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "A fake OpenAI / Anthropic / OpenRouter upstream for tests and benchmarks.\n"
        "Per-request headers override the flags: x-fake-chunks, x-fake-delay-ms,\n"
        "x-fake-interval-ms, x-fake-fault, x-fake-tool, x-fake-cache-read, x-fake-cache-write,\n"
        "x-fake-text, x-fake-delta-usage, x-fake-ignore-max-tokens; so does a\n"
        "[fake chunks=N fault=F ...] directive in the last user message. GET /fake/stats\n"
        "reports counters; POST /fake/reset clears them.\n"
        "Stops on SIGTERM/SIGINT, and when stdin (a pipe) is closed."));
    parser.addHelpOption();
    const QCommandLineOption listen(QStringLiteral("listen"),
                                    QStringLiteral("Loopback address to listen on."),
                                    QStringLiteral("HOST:PORT"), QStringLiteral("127.0.0.1:0"));
    const QCommandLineOption chunks(QStringLiteral("chunks"),
                                    QStringLiteral("Pieces (= completion tokens) per answer."),
                                    QStringLiteral("N"), QStringLiteral("8"));
    const QCommandLineOption firstByte(QStringLiteral("first-byte-ms"),
                                       QStringLiteral("Delay before the response starts."),
                                       QStringLiteral("MS"), QStringLiteral("0"));
    const QCommandLineOption interval(QStringLiteral("interval-ms"),
                                      QStringLiteral("Delay between streamed pieces."),
                                      QStringLiteral("MS"), QStringLiteral("0"));
    const QCommandLineOption fault(
        QStringLiteral("fault"),
        QStringLiteral("Fault for every request: 429[:S], 500, 503, any 4xx/5xx, "
                       "slow-first-byte[:MS], reset-mid-stream[:K], stall-mid-stream[:K], "
                       "error-mid-stream[:K], malformed-json[:K], hang, reset."),
        QStringLiteral("FAULT"));
    const QCommandLineOption requireKey(
        QStringLiteral("require-key"),
        QStringLiteral("Accept only this API key (repeatable); others get 401."),
        QStringLiteral("KEY"));
    const QCommandLineOption keyFault(
        QStringLiteral("key-fault"),
        QStringLiteral("Fault for requests made with KEY (repeatable), e.g. sk-a=429."),
        QStringLiteral("KEY=FAULT"));
    const QCommandLineOption log(QStringLiteral("log"),
                                 QStringLiteral("Append one JSON line per request to FILE."),
                                 QStringLiteral("FILE"));
    const QCommandLineOption catalog(
        QStringLiteral("catalog"),
        QStringLiteral("Serve FILE at GET /api/v1/models instead of the built-in catalog."),
        QStringLiteral("FILE"));
    const QCommandLineOption socialOpenApi(
        QStringLiteral("social-openapi"),
        QStringLiteral("Serve FILE (a TikHub-style OpenAPI document) at GET /openapi.json and "
                       "answer each of its operations."),
        QStringLiteral("FILE"));
    const QCommandLineOption ignoreStdin(QStringLiteral("ignore-stdin"),
                                         QStringLiteral("Keep running when stdin is closed."));
    parser.addOptions({listen, chunks, firstByte, interval, fault, requireKey, keyFault, log,
                       catalog, socialOpenApi, ignoreStdin});
    parser.process(app);

    FakeOptions options;
    QString error;
    if (!parseListen(parser.value(listen), &options.address, &options.port, &error)) {
        std::fprintf(stderr, "fake_upstream: %s\n", qPrintable(error));
        return 2;
    }
    if (!parseCount(parser, chunks.names().first(), 1, 100'000, &options.chunks) ||
        !parseCount(parser, firstByte.names().first(), 0, 3'600'000, &options.firstByteMs) ||
        !parseCount(parser, interval.names().first(), 0, 3'600'000, &options.intervalMs))
        return 2;
    options.fault = parser.value(fault);
    for (const QString &key : parser.values(requireKey))
        options.requireKeys.append(key.toUtf8());
    for (const QString &pair : parser.values(keyFault)) {
        const qsizetype eq = pair.lastIndexOf(QLatin1Char('='));
        if (eq <= 0) {
            std::fprintf(stderr, "fake_upstream: --key-fault takes KEY=FAULT\n");
            return 2;
        }
        options.keyFaults.insert(pair.left(eq).toUtf8(), pair.mid(eq + 1));
    }
    options.logPath = parser.value(log);
    options.catalogPath = parser.value(catalog);
    options.socialOpenApiPath = parser.value(socialOpenApi);

    raiseFileLimit();
    std::signal(SIGPIPE, SIG_IGN);
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, g_signalPipe) != 0) {
        std::perror("fake_upstream: socketpair");
        return 1;
    }
    QSocketNotifier signalNotifier(g_signalPipe[0], QSocketNotifier::Read);
    QObject::connect(&signalNotifier, &QSocketNotifier::activated, &app, [] {
        char c;
        [[maybe_unused]] const ssize_t n = ::read(g_signalPipe[0], &c, 1);
        QCoreApplication::quit();
    });
    struct sigaction action = {};
    action.sa_handler = onSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGTERM, &action, nullptr);
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGHUP, &action, nullptr);

    // Driven by a parent through a pipe (QProcess, a shell pipeline): when the parent goes away
    // the pipe closes and so do we. A terminal or /dev/null on stdin is not watched.
    std::unique_ptr<QSocketNotifier> stdinNotifier;
    struct stat st = {};
    if (!parser.isSet(ignoreStdin) && ::fstat(STDIN_FILENO, &st) == 0 &&
        (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
        stdinNotifier = std::make_unique<QSocketNotifier>(STDIN_FILENO, QSocketNotifier::Read);
        QObject::connect(stdinNotifier.get(), &QSocketNotifier::activated, &app,
                         [notifier = stdinNotifier.get()] {
                             char buffer[4096];
                             const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
                             if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
                                 notifier->setEnabled(false);
                                 QCoreApplication::quit();
                             }
                         });
    }

    FakeUpstream upstream(options);
    if (!upstream.start(&error)) {
        std::fprintf(stderr, "fake_upstream: %s\n", qPrintable(error));
        return 1;
    }
    std::printf("listening on http://%s:%u\n", qPrintable(options.address.toString()),
                unsigned(upstream.port()));
    std::fflush(stdout);
    return app.exec();
}
