// gateway_load: the load generator of tests/bench/gateway-bench.sh. Plain POSIX (epoll, one
// thread, non-blocking sockets, HTTP/1.1 keep-alive), no Qt, so that what it costs on the shared
// CPUs is small and the same for every target. Loopback only: it refuses any other address.
//
//   gateway_load latency URL [opts]   closed loop at concurrency 1: --requests N after --warmup W
//   gateway_load rate URL [opts]      open loop at --rate R req/s for --duration S (after
//                                     --warmup-s S); latency counted from the *scheduled* send
//                                     time (no coordinated omission), new connections opened
//                                     when none is idle (up to --max-conns, then queued)
//   gateway_load stream URL [opts]    closed loop at concurrency 1 over streaming requests: time
//                                     to the first content event and the gaps between content
//                                     events (each SSE event timestamped when its read completes)
//   gateway_load hold URL [opts]      --streams N streaming requests at once (opened over
//                                     --ramp-ms), sampled every --sample-ms: how many are open
//                                     and progressing (an event within --progress-ms), and the
//                                     VmRSS of each --rss-pid while all of them are open
//
// Common options: -H 'name: value' (repeatable), --body-file F, --get (GET without a body
// instead of POST; the URL's query is sent as given), --timeout-s S (hard stop).
// Prints one line of key=value pairs on stdout (times in microseconds); notes go to stderr.
// Exit status 0 when the run completed (errors are counted, not fatal), 2 on bad usage, 1 when
// the target cannot be reached at all.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Ns = int64_t;

Ns nowNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return Ns(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

[[noreturn]] void usage(const std::string &msg)
{
    std::fprintf(stderr, "gateway_load: %s\n(see the comment at the top of gateway_load.cpp)\n",
                 msg.c_str());
    std::exit(2);
}

struct Options
{
    std::string mode;
    std::string host;
    uint16_t port = 0;
    std::string path;
    std::vector<std::string> headers;
    std::string body;
    bool get = false;
    long requests = 1000;
    long warmup = 100;
    double rate = 500;
    double durationS = 3;
    double warmupS = 0.5;
    int maxConns = 512;
    int initialConns = 8;
    int streams = 1000;
    int rampMs = 2000;
    int sampleMs = 1000;
    int progressMs = 1000;
    int expectEvents = 0;
    double timeoutS = 60;
    std::vector<int> rssPids;
};

// ---- HTTP/1.1 response parsing (Content-Length, chunked, or until close) ----

struct ResponseParser
{
    enum State
    {
        Head,
        Length,
        ChunkSize,
        ChunkData,
        ChunkCrlf,
        Trailer,
        UntilClose,
        Done
    };
    State st = Head;
    std::string buf; // header block, or the current chunk-size / trailer line
    int status = 0;
    int64_t remaining = 0;
    bool close = false;
    bool error = false;
    size_t bytes = 0; // bytes of this response seen so far

    void reset() { *this = ResponseParser(); }

    static bool iequalsPrefix(const std::string &line, const char *name)
    {
        size_t n = std::strlen(name);
        if (line.size() < n)
            return false;
        for (size_t i = 0; i < n; ++i)
            if (std::tolower(static_cast<unsigned char>(line[i])) != name[i])
                return false;
        return true;
    }
    static std::string lower(std::string s)
    {
        for (auto &c : s)
            c = char(std::tolower(static_cast<unsigned char>(c)));
        return s;
    }

    bool parseHead()
    {
        // buf holds the head without the final blank line
        std::istringstream in(buf);
        std::string line;
        if (!std::getline(in, line))
            return false;
        if (line.compare(0, 5, "HTTP/") != 0)
            return false;
        size_t sp = line.find(' ');
        if (sp == std::string::npos)
            return false;
        status = std::atoi(line.c_str() + sp + 1);
        bool chunked = false;
        int64_t length = -1;
        while (std::getline(in, line)) {
            if (!line.empty() && line.back() == '\r')
                line.pop_back();
            size_t colon = line.find(':');
            if (colon == std::string::npos)
                continue;
            std::string value = line.substr(colon + 1);
            value.erase(0, value.find_first_not_of(" \t"));
            if (iequalsPrefix(line, "content-length:"))
                length = std::strtoll(value.c_str(), nullptr, 10);
            else if (iequalsPrefix(line, "transfer-encoding:"))
                chunked = lower(value).find("chunked") != std::string::npos;
            else if (iequalsPrefix(line, "connection:"))
                close = lower(value).find("close") != std::string::npos;
        }
        buf.clear();
        if (status == 204 || status == 304 || (status >= 100 && status < 200))
            st = Done;
        else if (chunked)
            st = ChunkSize;
        else if (length >= 0) {
            remaining = length;
            st = length == 0 ? Done : Length;
        } else {
            st = UntilClose;
            close = true;
        }
        return true;
    }

    // Feeds bytes; body bytes go to sink. Stops at Done (extra bytes are ignored: no pipelining).
    template <class Sink> void feed(const char *p, size_t n, Sink &&sink)
    {
        bytes += n;
        while (n > 0 && st != Done && !error) {
            switch (st) {
            case Head: {
                size_t old = buf.size();
                buf.append(p, n);
                size_t end = buf.find("\r\n\r\n", old >= 3 ? old - 3 : 0);
                if (end == std::string::npos) {
                    if (buf.size() > 65536)
                        error = true;
                    return;
                }
                size_t used = end + 4 - old;
                buf.resize(end);
                p += used;
                n -= used;
                if (!parseHead())
                    error = true;
                break;
            }
            case Length: {
                size_t take = size_t(std::min<int64_t>(remaining, int64_t(n)));
                sink(p, take);
                p += take;
                n -= take;
                remaining -= int64_t(take);
                if (remaining == 0)
                    st = Done;
                break;
            }
            case ChunkSize:
            case Trailer: {
                const char *nl = static_cast<const char *>(std::memchr(p, '\n', n));
                size_t take = nl ? size_t(nl - p) + 1 : n;
                buf.append(p, take);
                p += take;
                n -= take;
                if (!nl) {
                    if (buf.size() > 4096)
                        error = true;
                    break;
                }
                std::string line = buf;
                buf.clear();
                while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
                    line.pop_back();
                if (st == Trailer) {
                    if (line.empty())
                        st = Done;
                    break;
                }
                char *endp = nullptr;
                long long size = std::strtoll(line.c_str(), &endp, 16);
                if (endp == line.c_str() || size < 0) {
                    error = true;
                    break;
                }
                if (size == 0)
                    st = Trailer;
                else {
                    remaining = size;
                    st = ChunkData;
                }
                break;
            }
            case ChunkData: {
                size_t take = size_t(std::min<int64_t>(remaining, int64_t(n)));
                sink(p, take);
                p += take;
                n -= take;
                remaining -= int64_t(take);
                if (remaining == 0) {
                    st = ChunkCrlf;
                    remaining = 2;
                }
                break;
            }
            case ChunkCrlf: {
                size_t take = size_t(std::min<int64_t>(remaining, int64_t(n)));
                p += take;
                n -= take;
                remaining -= int64_t(take);
                if (remaining == 0)
                    st = ChunkSize;
                break;
            }
            case UntilClose:
                sink(p, n);
                n = 0;
                break;
            case Done:
                break;
            }
        }
    }
};

// Splits an SSE body into events and tells content events (a non-empty "content" string, i.e.
// a token) from the others.
struct SseTracker
{
    std::string pending;
    int events = 0;
    int contentEvents = 0;
    bool sawDone = false;
    Ns firstContent = 0;
    Ns lastContent = 0;
    std::vector<Ns> gaps; // between consecutive content events (only filled when wanted)
    bool keepGaps = false;

    void reset()
    {
        pending.clear();
        events = contentEvents = 0;
        sawDone = false;
        firstContent = lastContent = 0;
        gaps.clear();
    }

    static bool isContentEvent(const std::string &ev)
    {
        // OpenAI chunk: "delta":{"content":"..."}; messages: "text_delta","text":"..."
        for (const char *key : {"\"content\":\"", "\"text\":\""}) {
            size_t at = 0;
            while ((at = ev.find(key, at)) != std::string::npos) {
                at += std::strlen(key);
                if (at < ev.size() && ev[at] != '"')
                    return true;
            }
        }
        return false;
    }

    void feed(const char *p, size_t n, Ns t)
    {
        for (size_t i = 0; i < n; ++i)
            if (p[i] != '\r')
                pending.push_back(p[i]);
        size_t start = 0, end;
        while ((end = pending.find("\n\n", start)) != std::string::npos) {
            std::string ev = pending.substr(start, end - start);
            start = end + 2;
            if (ev.empty())
                continue;
            ++events;
            if (ev.find("data: [DONE]") != std::string::npos) {
                sawDone = true;
                continue;
            }
            if (isContentEvent(ev)) {
                if (contentEvents == 0)
                    firstContent = t;
                else if (keepGaps)
                    gaps.push_back(t - lastContent);
                lastContent = t;
                ++contentEvents;
            }
        }
        pending.erase(0, start);
    }
};

// ---- connections and the event loop ----

struct Job
{
    int64_t id = -1;
    Ns sched = 0; // when it should have been sent (rate mode) or was sent
};

struct Conn
{
    int fd = -1;
    bool connected = false;
    bool busy = false;
    int served = 0; // responses completed on this connection
    bool wantOut = false;
    std::string out;
    size_t outOff = 0;
    ResponseParser rp;
    SseTracker sse;
    Job job;
    Ns sent = 0;
    Ns headAt = 0;
    int retries = 0;
    bool finished = false; // hold mode: its one request is over
    bool ok = false;
    std::string errBody; // the start of a non-200 answer, for the log
};

class Engine
{
public:
    const Options &opt;
    int ep = -1;
    int tfd = -1;
    std::string request;
    std::vector<std::unique_ptr<Conn>> conns;
    std::vector<Conn *> idle;
    bool trackSse = false;
    bool keepGaps = false;
    bool allowSweep = true; // hold mode keeps raw pointers to its connections
    int openCount = 0;
    long connectErrors = 0;
    long protocolErrors = 0;

    // called when a request ends: ok = complete response (any status)
    std::function<void(Conn *, bool ok, Ns t)> onDone;

    explicit Engine(const Options &o) : opt(o)
    {
        ep = epoll_create1(EPOLL_CLOEXEC);
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = nullptr;
        epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
        std::string hostHeader = o.host + ":" + std::to_string(o.port);
        request = o.get
                      ? "GET " + o.path + " HTTP/1.1\r\nHost: " + hostHeader + "\r\nAccept: */*\r\n"
                      : "POST " + o.path + " HTTP/1.1\r\nHost: " + hostHeader +
                            "\r\nContent-Type: application/json\r\nAccept: */*\r\n"
                            "Content-Length: " +
                            std::to_string(o.body.size()) + "\r\n";
        for (auto &h : o.headers)
            request += h + "\r\n";
        request += "\r\n" + o.body;
    }

    void armTimer(Ns at)
    {
        itimerspec its{};
        if (at > 0) {
            its.it_value.tv_sec = at / 1000000000;
            its.it_value.tv_nsec = at % 1000000000;
            if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
                its.it_value.tv_nsec = 1;
        }
        timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, nullptr);
    }

    Conn *open()
    {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            ++connectErrors;
            return nullptr;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(opt.port);
        inet_pton(AF_INET, opt.host.c_str(), &sa.sin_addr);
        int r = connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa);
        if (r < 0 && errno != EINPROGRESS) {
            ::close(fd);
            ++connectErrors;
            return nullptr;
        }
        auto c = std::make_unique<Conn>();
        c->fd = fd;
        c->connected = (r == 0);
        c->wantOut = true;
        c->sse.keepGaps = keepGaps;
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT;
        ev.data.ptr = c.get();
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        Conn *raw = c.get();
        conns.push_back(std::move(c));
        ++openCount;
        return raw;
    }

    void setOut(Conn *c, bool want)
    {
        if (c->wantOut == want)
            return;
        c->wantOut = want;
        epoll_event ev{};
        ev.events = uint32_t(EPOLLIN) | (want ? uint32_t(EPOLLOUT) : 0u);
        ev.data.ptr = c;
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    }

    void closeConn(Conn *c)
    {
        if (c->fd >= 0) {
            epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, nullptr);
            ::close(c->fd);
            c->fd = -1;
            --openCount;
        }
        idle.erase(std::remove(idle.begin(), idle.end(), c), idle.end());
    }

    // Drops closed connections that no one refers to any more.
    void sweep()
    {
        conns.erase(
            std::remove_if(conns.begin(), conns.end(),
                           [](const std::unique_ptr<Conn> &c) { return c->fd < 0 && !c->busy; }),
            conns.end());
    }

    void start(Conn *c, const Job &job, Ns t)
    {
        c->busy = true;
        c->job = job;
        c->rp.reset();
        c->sse.reset();
        c->out = request;
        c->outOff = 0;
        c->sent = t;
        c->headAt = 0;
        idle.erase(std::remove(idle.begin(), idle.end(), c), idle.end());
        if (c->connected)
            flush(c);
        else
            setOut(c, true);
    }

    void flush(Conn *c)
    {
        while (c->outOff < c->out.size()) {
            ssize_t w =
                ::send(c->fd, c->out.data() + c->outOff, c->out.size() - c->outOff, MSG_NOSIGNAL);
            if (w > 0) {
                c->outOff += size_t(w);
                continue;
            }
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                setOut(c, true);
                return;
            }
            fail(c, nowNs());
            return;
        }
        setOut(c, false);
    }

    // A request whose connection broke. A kept-alive connection the server closed just as we
    // reused it (no byte of the answer seen) is retried once on a fresh one, as browsers do.
    void fail(Conn *c, Ns t)
    {
        bool wasBusy = c->busy;
        Job job = c->job;
        bool retry = wasBusy && c->served > 0 && c->rp.bytes == 0 && c->retries == 0;
        Ns sent = c->sent;
        closeConn(c);
        c->busy = false;
        if (!wasBusy)
            return;
        if (retry) {
            Conn *n = open();
            if (n) {
                n->retries = 1;
                start(n, job, sent);
                return;
            }
        }
        c->ok = false;
        c->finished = true;
        if (reported < 5) {
            ++reported;
            std::fprintf(
                stderr, "gateway_load: connection failed after %.1f ms (%zu bytes of the answer)\n",
                double(t - sent) / 1e6, c->rp.bytes);
        }
        if (onDone)
            onDone(c, false, t);
    }

    long reported = 0; // answers other than 200 written to stderr (the first few)

    void complete(Conn *c, Ns t)
    {
        if (c->rp.status != 200 && reported < 5) {
            ++reported;
            std::fprintf(stderr, "gateway_load: answer %d after %.1f ms: %s\n", c->rp.status,
                         double(t - c->sent) / 1e6, c->errBody.c_str());
        }
        c->errBody.clear();
        c->busy = false;
        ++c->served;
        c->retries = 0;
        bool reusable = !c->rp.close && c->rp.st == ResponseParser::Done;
        c->ok = true;
        c->finished = true;
        if (!reusable)
            closeConn(c);
        else
            idle.push_back(c);
        if (onDone)
            onDone(c, true, t); // may start a new request on c
    }

    void readable(Conn *c)
    {
        static char buf[65536];
        for (;;) {
            ssize_t r = ::recv(c->fd, buf, sizeof buf, 0);
            Ns t = nowNs();
            if (r > 0) {
                if (!c->busy) { // unsolicited bytes: drop the connection
                    ++protocolErrors;
                    closeConn(c);
                    return;
                }
                bool hadHead = c->rp.st != ResponseParser::Head;
                auto sink = [&](const char *p, size_t n) {
                    if (c->rp.status != 200) {
                        if (c->errBody.size() < 300)
                            c->errBody.append(p, std::min<size_t>(n, 300 - c->errBody.size()));
                        return;
                    }
                    if (trackSse)
                        c->sse.feed(p, n, t);
                };
                c->rp.feed(buf, size_t(r), sink);
                if (!hadHead && c->rp.st != ResponseParser::Head)
                    c->headAt = t;
                if (c->rp.error) {
                    ++protocolErrors;
                    fail(c, t);
                    return;
                }
                if (c->rp.st == ResponseParser::Done) {
                    complete(c, t);
                    return;
                }
                continue;
            }
            if (r == 0) {
                if (c->busy && c->rp.st == ResponseParser::UntilClose) {
                    c->rp.st = ResponseParser::Done;
                    c->rp.close = true;
                    complete(c, t);
                } else if (c->busy)
                    fail(c, t);
                else
                    closeConn(c);
                return;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            if (errno == EINTR)
                continue;
            if (c->busy)
                fail(c, t);
            else
                closeConn(c);
            return;
        }
    }

    // Runs the loop until stop() is true or the deadline passes; onTimer is called on each
    // timer expiry (it re-arms the timer itself).
    void run(const std::function<bool()> &stop, Ns deadline, const std::function<void()> &onTimer)
    {
        epoll_event evs[256];
        while (!stop()) {
            Ns now = nowNs();
            if (now >= deadline)
                return;
            int waitMs = int(std::min<Ns>((deadline - now) / 1000000 + 1, 1000));
            int n = epoll_wait(ep, evs, 256, waitMs);
            if (n < 0 && errno != EINTR)
                return;
            for (int i = 0; i < n; ++i) {
                if (evs[i].data.ptr == nullptr) {
                    uint64_t x;
                    while (::read(tfd, &x, sizeof x) > 0) {
                    }
                    if (onTimer)
                        onTimer();
                    continue;
                }
                Conn *c = static_cast<Conn *>(evs[i].data.ptr);
                if (c->fd < 0)
                    continue;
                uint32_t e = evs[i].events;
                if (!c->connected && (e & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
                    int err = 0;
                    socklen_t len = sizeof err;
                    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
                    if (err != 0) {
                        ++connectErrors;
                        fail(c, nowNs());
                        continue;
                    }
                    c->connected = true;
                    if (c->busy)
                        flush(c);
                    else
                        setOut(c, false);
                    if (c->fd < 0)
                        continue;
                }
                if (e & (EPOLLIN | EPOLLERR | EPOLLHUP))
                    readable(c);
                if (c->fd >= 0 && (e & EPOLLOUT) && c->connected && c->busy &&
                    c->outOff < c->out.size())
                    flush(c);
            }
            if (allowSweep && conns.size() > 64 && conns.size() > size_t(openCount) * 2)
                sweep();
        }
    }
};

// ---- statistics ----

struct Stats
{
    std::vector<Ns> v;
    void add(Ns x) { v.push_back(x); }
    void sort() { std::sort(v.begin(), v.end()); }
    double pct(double q) const // microseconds
    {
        if (v.empty())
            return -1;
        size_t idx = size_t(std::ceil(q * double(v.size())));
        idx = idx == 0 ? 0 : idx - 1;
        idx = std::min(idx, v.size() - 1);
        return double(v[idx]) / 1000.0;
    }
    double mean() const
    {
        if (v.empty())
            return -1;
        long double s = 0;
        for (Ns x : v)
            s += x;
        return double(s / v.size()) / 1000.0;
    }
    double max() const { return v.empty() ? -1 : double(v.back()) / 1000.0; }
};

const Ns kProgramStart = nowNs();

// The CPU this process used since it started, in % of one core (so the script can tell how
// much of the machine the load generator itself took).
std::string selfCpu()
{
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    double cpu = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    double wall = double(nowNs() - kProgramStart) / 1e9;
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", wall > 0 ? cpu / wall * 100 : 0.0);
    return b;
}

void printKv(const std::vector<std::pair<std::string, std::string>> &kv)
{
    std::string line;
    for (auto &[k, v] : kv) {
        if (!line.empty())
            line += ' ';
        line += k + "=" + v;
    }
    line += " cpu_self=" + selfCpu();
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

std::string fmt(double x, int prec = 1)
{
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", prec, x);
    return b;
}

bool checkTarget(Engine &e)
{
    Conn *c = e.open();
    if (!c)
        return false;
    bool done = false, ok = false;
    int status = 0;
    e.onDone = [&](Conn *cc, bool good, Ns) {
        done = true;
        ok = good;
        status = cc->rp.status;
    };
    e.start(c, Job{0, nowNs()}, nowNs());
    e.run([&] { return done; }, nowNs() + Ns(10e9), nullptr);
    if (!done || !ok) {
        std::fprintf(stderr, "gateway_load: no answer from %s:%u%s\n", e.opt.host.c_str(),
                     e.opt.port, e.opt.path.c_str());
        return false;
    }
    if (status != 200)
        std::fprintf(stderr, "gateway_load: the first request answered %d\n", status);
    return status == 200;
}

// ---- modes ----

int runLatency(const Options &o)
{
    Engine e(o);
    e.trackSse = false;
    if (!checkTarget(e))
        return 1;
    Stats st;
    long done = 0, errors = 0, non200 = 0;
    long total = o.warmup + o.requests;
    Ns t0 = 0;
    Ns deadline = nowNs() + Ns(o.timeoutS * 1e9);
    std::function<void()> next;
    e.onDone = [&](Conn *c, bool ok, Ns t) {
        ++done;
        if (done > o.warmup) {
            if (done == o.warmup + 1)
                t0 = c->sent;
            if (!ok)
                ++errors;
            else if (c->rp.status != 200)
                ++non200;
            else
                st.add(t - c->sent);
        }
        if (done < total)
            next();
    };
    next = [&] {
        Conn *c = e.idle.empty() ? e.open() : e.idle.back();
        if (!c) {
            ++errors;
            ++done;
            return;
        }
        Ns t = nowNs();
        e.start(c, Job{done, t}, t);
    };
    next();
    e.run([&] { return done >= total; }, deadline, nullptr);
    Ns span = nowNs() - t0;
    st.sort();
    printKv({{"mode", "latency"},
             {"ok", std::to_string(st.v.size())},
             {"errors", std::to_string(errors + (total - std::min(done, total)))},
             {"non200", std::to_string(non200)},
             {"p50_us", fmt(st.pct(0.50))},
             {"p90_us", fmt(st.pct(0.90))},
             {"p99_us", fmt(st.pct(0.99))},
             {"p999_us", fmt(st.pct(0.999))},
             {"max_us", fmt(st.max())},
             {"mean_us", fmt(st.mean())},
             {"rps", fmt(double(st.v.size()) / (double(span) / 1e9), 0)}});
    return 0;
}

int runRate(const Options &o)
{
    Engine e(o);
    if (!checkTarget(e))
        return 1;
    e.onDone = nullptr;
    // pre-open connections so that the first requests do not pay for the handshake
    for (int i = 0; i < o.initialConns - 1 && i < o.maxConns; ++i)
        if (Conn *c = e.open())
            e.idle.push_back(c);
    e.run(
        [&] {
            for (auto &c : e.conns)
                if (c->fd >= 0 && !c->connected)
                    return false;
            return true;
        },
        nowNs() + Ns(2e9), nullptr);

    const Ns interval = Ns(1e9 / o.rate);
    const Ns start = nowNs() + Ns(1e6);
    const Ns warmEnd = start + Ns(o.warmupS * 1e9);
    const Ns end = warmEnd + Ns(o.durationS * 1e9);
    const int64_t totalJobs = int64_t((end - start) / interval);
    int64_t nextJob = 0;
    int64_t completed = 0, measured = 0, errors = 0, non200 = 0, queuedMax = 0;
    Stats st;
    std::deque<Job> backlog;

    auto dispatch = [&](const Job &job) {
        Conn *c = nullptr;
        if (!e.idle.empty())
            c = e.idle.back();
        else if (e.openCount < o.maxConns)
            c = e.open();
        if (!c) {
            backlog.push_back(job);
            queuedMax = std::max<int64_t>(queuedMax, int64_t(backlog.size()));
            return;
        }
        e.start(c, job, nowNs());
    };
    e.onDone = [&](Conn *c, bool ok, Ns t) {
        ++completed;
        if (c->job.sched >= warmEnd && c->job.sched < end) {
            if (!ok)
                ++errors;
            else if (c->rp.status != 200)
                ++non200;
            else {
                st.add(t - c->job.sched);
                ++measured;
            }
        }
        if (!backlog.empty()) {
            Job j = backlog.front();
            backlog.pop_front();
            dispatch(j);
        }
    };
    auto onTimer = [&] {
        Ns now = nowNs();
        while (nextJob < totalJobs && start + nextJob * interval <= now) {
            dispatch(Job{nextJob, start + nextJob * interval});
            ++nextJob;
        }
        if (nextJob < totalJobs)
            e.armTimer(start + nextJob * interval);
    };
    e.armTimer(start);
    // all sent, then up to 3 s for the last answers (later ones count as errors)
    const Ns hardEnd = std::min(end + Ns(3e9), nowNs() + Ns(o.timeoutS * 1e9));
    e.run([&] { return nextJob >= totalJobs && completed >= totalJobs; }, hardEnd, onTimer);
    int64_t inWindow = 0;
    for (int64_t i = 0; i < nextJob; ++i) {
        Ns s = start + i * interval;
        if (s >= warmEnd && s < end)
            ++inWindow;
    }
    int64_t unanswered = inWindow - measured - errors - non200;
    st.sort();
    printKv({{"mode", "rate"},
             {"target_rps", fmt(o.rate, 0)},
             {"sent", std::to_string(inWindow)},
             {"ok", std::to_string(measured)},
             {"errors", std::to_string(errors + std::max<int64_t>(unanswered, 0))},
             {"non200", std::to_string(non200)},
             {"achieved_rps", fmt(double(measured) / o.durationS, 0)},
             {"p50_us", fmt(st.pct(0.50))},
             {"p90_us", fmt(st.pct(0.90))},
             {"p99_us", fmt(st.pct(0.99))},
             {"max_us", fmt(st.max())},
             {"conns", std::to_string(e.conns.size())},
             {"queued_max", std::to_string(queuedMax)}});
    return 0;
}

int runStream(const Options &o)
{
    Engine e(o);
    e.trackSse = true;
    e.keepGaps = true;
    if (!checkTarget(e))
        return 1;
    Stats ttft, gaps, total;
    long done = 0, errors = 0, non200 = 0, badEvents = 0;
    int evMin = 1 << 30, evMax = 0;
    long n = o.warmup + o.requests;
    Ns deadline = nowNs() + Ns(o.timeoutS * 1e9);
    std::function<void()> next;
    e.onDone = [&](Conn *c, bool ok, Ns t) {
        ++done;
        if (done > o.warmup) {
            if (!ok)
                ++errors;
            else if (c->rp.status != 200)
                ++non200;
            else {
                int ev = c->sse.contentEvents;
                evMin = std::min(evMin, ev);
                evMax = std::max(evMax, ev);
                if (ev == 0 || (o.expectEvents > 0 && ev != o.expectEvents) || !c->sse.sawDone)
                    ++badEvents;
                if (ev > 0)
                    ttft.add(c->sse.firstContent - c->sent);
                for (Ns g : c->sse.gaps)
                    gaps.add(g);
                total.add(t - c->sent);
            }
        }
        if (done < n)
            next();
    };
    next = [&] {
        Conn *c = e.idle.empty() ? e.open() : e.idle.back();
        if (!c) {
            ++errors;
            ++done;
            return;
        }
        Ns t = nowNs();
        e.start(c, Job{done, t}, t);
    };
    next();
    e.run([&] { return done >= n; }, deadline, nullptr);
    ttft.sort();
    gaps.sort();
    total.sort();
    printKv({{"mode", "stream"},
             {"ok", std::to_string(total.v.size())},
             {"errors", std::to_string(errors + (n - std::min(done, n)))},
             {"non200", std::to_string(non200)},
             {"bad_streams", std::to_string(badEvents)},
             {"events_min", std::to_string(evMin == (1 << 30) ? 0 : evMin)},
             {"events_max", std::to_string(evMax)},
             {"ttft_p50_us", fmt(ttft.pct(0.50))},
             {"ttft_p99_us", fmt(ttft.pct(0.99))},
             {"gap_p50_us", fmt(gaps.pct(0.50))},
             {"gap_p99_us", fmt(gaps.pct(0.99))},
             {"gap_max_us", fmt(gaps.max())},
             {"gaps", std::to_string(gaps.v.size())},
             {"total_p50_us", fmt(total.pct(0.50))}});
    return 0;
}

long cpuTicks(int pid) // utime + stime
{
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    size_t rp = all.rfind(')');
    if (rp == std::string::npos)
        return -1;
    std::istringstream in(all.substr(rp + 2));
    std::string field;
    long ut = 0, st = 0;
    for (int i = 3; i <= 15 && in >> field; ++i) {
        if (i == 14)
            ut = std::atol(field.c_str());
        if (i == 15)
            st = std::atol(field.c_str());
    }
    return ut + st;
}

long rssKb(int pid)
{
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(f, line))
        if (line.compare(0, 6, "VmRSS:") == 0)
            return std::strtol(line.c_str() + 6, nullptr, 10);
    return -1;
}

int runHold(const Options &o)
{
    Engine e(o);
    e.trackSse = true;
    e.allowSweep = false;
    const Ns t0 = nowNs();
    const Ns deadline = t0 + Ns(o.timeoutS * 1e9);
    int opened = 0, finished = 0, ok = 0, errors = 0, non200 = 0, short_ = 0;
    std::vector<Conn *> mine;
    e.onDone = [&](Conn *c, bool good, Ns) {
        ++finished;
        if (!good)
            ++errors;
        else if (c->rp.status != 200)
            ++non200;
        else if ((o.expectEvents > 0 && c->sse.contentEvents != o.expectEvents) || !c->sse.sawDone)
            ++short_;
        else
            ++ok;
        e.closeConn(c); // one request per connection: keep the count of open sockets honest
    };
    Ns allOpenAt = 0;
    int samples = 0, minProgressing = o.streams, minOpen = o.streams, maxOpen = 0;
    std::map<int, long> rssMax, rssFirst, rssPeak;
    Ns nextSample = t0 + Ns(o.sampleMs) * 1000000;
    std::map<int, long> lastTicks;
    Ns lastSampleAt = t0;
    for (int pid : o.rssPids)
        lastTicks[pid] = cpuTicks(pid);
    const double hz = double(sysconf(_SC_CLK_TCK));
    auto onTimer = [&] {
        Ns now = nowNs();
        // ramp
        int want = o.rampMs <= 0
                       ? o.streams
                       : int(std::min<double>(o.streams, double(o.streams) * double(now - t0) /
                                                             (o.rampMs * 1e6)));
        while (opened < want) {
            Conn *c = e.open();
            ++opened;
            if (!c) {
                ++errors;
                ++finished;
                continue;
            }
            mine.push_back(c);
            e.start(c, Job{opened, now}, now);
        }
        if (now >= nextSample) {
            nextSample += Ns(o.sampleMs) * 1000000;
            int open = 0, progressing = 0, started = 0;
            for (Conn *c : mine) {
                if (c->sse.contentEvents > 0 || c->finished)
                    ++started;
                if (c->finished)
                    continue;
                if (c->rp.st != ResponseParser::Head)
                    ++open;
                if (c->sse.contentEvents > 0 &&
                    now - c->sse.lastContent <= Ns(o.progressMs) * 1000000)
                    ++progressing;
            }
            maxOpen = std::max(maxOpen, open);
            std::string rss;
            for (int pid : o.rssPids) {
                long kb = rssKb(pid);
                long ticks = cpuTicks(pid);
                double cpu =
                    double(ticks - lastTicks[pid]) / hz / (double(now - lastSampleAt) / 1e9);
                lastTicks[pid] = ticks;
                rssPeak[pid] = std::max(rssPeak[pid], kb);
                rss += " pid" + std::to_string(pid) + ":rss=" + fmt(kb / 1024.0) +
                       "MB,cpu=" + fmt(cpu * 100, 0) + "%";
            }
            lastSampleAt = now;
            std::fprintf(stderr, "  t=%.1fs opened=%d open=%d progressing=%d finished=%d%s\n",
                         double(now - t0) / 1e9, opened, open, progressing, finished, rss.c_str());
            if (!allOpenAt && opened == o.streams && started == o.streams && ok + short_ == 0)
                allOpenAt = now;
            // a sample counts while every stream has started (or failed) and none has ended
            // normally yet
            if (allOpenAt && ok + short_ == 0) {
                ++samples;
                minProgressing = std::min(minProgressing, progressing);
                minOpen = std::min(minOpen, open);
                for (int pid : o.rssPids) {
                    long kb = rssKb(pid);
                    rssMax[pid] = std::max(rssMax[pid], kb);
                    if (!rssFirst.count(pid))
                        rssFirst[pid] = kb;
                }
            }
        }
        Ns nextTick = opened < o.streams ? now + 5000000 : nextSample;
        e.armTimer(std::min(nextTick, nextSample));
    };
    e.armTimer(t0 + 1000);
    e.run([&] { return opened >= o.streams && finished >= o.streams; }, deadline, onTimer);
    std::vector<std::pair<std::string, std::string>> kv = {
        {"mode", "hold"},
        {"streams", std::to_string(o.streams)},
        {"ok", std::to_string(ok)},
        {"errors", std::to_string(errors + (o.streams - finished))},
        {"non200", std::to_string(non200)},
        {"short", std::to_string(short_)},
        {"all_open_ms", allOpenAt ? fmt(double(allOpenAt - t0) / 1e6, 0) : std::string("-")},
        {"samples", std::to_string(samples)},
        {"min_open", std::to_string(samples ? minOpen : 0)},
        {"min_progressing", std::to_string(samples ? minProgressing : 0)},
        {"max_open", std::to_string(maxOpen)},
        {"elapsed_ms", fmt(double(nowNs() - t0) / 1e6, 0)}};
    for (int pid : o.rssPids) {
        kv.push_back({"rss_max_kb_" + std::to_string(pid),
                      std::to_string(rssMax.count(pid) ? rssMax[pid] : -1)});
        kv.push_back({"rss_first_kb_" + std::to_string(pid),
                      std::to_string(rssFirst.count(pid) ? rssFirst[pid] : -1)});
        kv.push_back({"rss_peak_kb_" + std::to_string(pid),
                      std::to_string(rssPeak.count(pid) ? rssPeak[pid] : -1)});
    }
    printKv(kv);
    return 0;
}

void parseUrl(Options &o, const std::string &url)
{
    const std::string scheme = "http://";
    if (url.compare(0, scheme.size(), scheme) != 0)
        usage("only http:// URLs");
    std::string rest = url.substr(scheme.size());
    size_t slash = rest.find('/');
    std::string hostport = rest.substr(0, slash);
    o.path = slash == std::string::npos ? "/" : rest.substr(slash);
    size_t colon = hostport.rfind(':');
    if (colon == std::string::npos)
        usage("the URL needs a port");
    o.host = hostport.substr(0, colon);
    o.port = uint16_t(std::atoi(hostport.c_str() + colon + 1));
    in_addr a{};
    if (inet_pton(AF_INET, o.host.c_str(), &a) != 1 || (ntohl(a.s_addr) >> 24) != 127)
        usage("loopback IPv4 addresses only (127.0.0.0/8), got " + o.host);
}

} // namespace

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    Options o;
    if (argc < 3)
        usage("usage: gateway_load latency|rate|stream|hold URL [options]");
    o.mode = argv[1];
    parseUrl(o, argv[2]);
    for (int i = 3; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc)
                usage(a + " needs a value");
            return argv[++i];
        };
        if (a == "-H")
            o.headers.push_back(val());
        else if (a == "--body-file") {
            std::ifstream f(val(), std::ios::binary);
            if (!f)
                usage("cannot read the body file");
            std::stringstream ss;
            ss << f.rdbuf();
            o.body = ss.str();
        } else if (a == "--body")
            o.body = val();
        else if (a == "--get")
            o.get = true;
        else if (a == "--requests")
            o.requests = std::atol(val().c_str());
        else if (a == "--warmup")
            o.warmup = std::atol(val().c_str());
        else if (a == "--rate")
            o.rate = std::atof(val().c_str());
        else if (a == "--duration")
            o.durationS = std::atof(val().c_str());
        else if (a == "--warmup-s")
            o.warmupS = std::atof(val().c_str());
        else if (a == "--max-conns")
            o.maxConns = std::atoi(val().c_str());
        else if (a == "--initial-conns")
            o.initialConns = std::atoi(val().c_str());
        else if (a == "--streams")
            o.streams = std::atoi(val().c_str());
        else if (a == "--ramp-ms")
            o.rampMs = std::atoi(val().c_str());
        else if (a == "--sample-ms")
            o.sampleMs = std::atoi(val().c_str());
        else if (a == "--progress-ms")
            o.progressMs = std::atoi(val().c_str());
        else if (a == "--expect-events")
            o.expectEvents = std::atoi(val().c_str());
        else if (a == "--timeout-s")
            o.timeoutS = std::atof(val().c_str());
        else if (a == "--rss-pid")
            o.rssPids.push_back(std::atoi(val().c_str()));
        else
            usage("unknown option " + a);
    }
    if (o.get && !o.body.empty())
        usage("--get takes no body");
    if (o.rate <= 0 || o.durationS <= 0 || o.maxConns < 1 || o.streams < 1 || o.sampleMs < 10)
        usage("bad option value");
    if (o.mode == "latency")
        return runLatency(o);
    if (o.mode == "rate")
        return runRate(o);
    if (o.mode == "stream")
        return runStream(o);
    if (o.mode == "hold")
        return runHold(o);
    usage("unknown mode " + o.mode);
}
