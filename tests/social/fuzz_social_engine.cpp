// libFuzzer target for the social-data engine's two parsers of upstream bytes, built with clang
// outside the main build by tests/social/fuzz_social_engine.sh. Besides "no crash, no sanitizer
// report", it checks the properties the family relies on, and traps when one fails:
//  1. EnvelopeScanner gives the same answer fed whole, a byte at a time, and in pieces whose
//     sizes come from the input; fed piece by piece its answer only moves forward (Pending, then
//     Found, then possibly NotFound; a Found code never changes);
//  2. where QJsonDocument accepts the input and it keeps to RFC 8259 (QJsonDocument also takes raw
//     control characters, unknown escapes, ".5", "1."), the scanner's answer is exactly the first
//     top-level "code" as an integer literal that fits in 64 bits, else NotFound;
//  3. a Found answer is never given to an input QJsonDocument refuses, unless it refused only a
//     number beyond double's range (1e400: RFC 8259 JSON) or the input just has not ended yet;
//  4. SocialCatalog::parse() either fails with a message or gives actions under the prefix, and
//     document() then has every $ref resolvable inside it and unique operationIds.

#include "EnvelopeScanner.h"
#include "FuzzRequire.h"
#include "SocialCatalog.h"

#include <cstdio>
#include <cstring>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>

namespace {

struct Answer
{
    EnvelopeScanner::State state;
    std::optional<qint64> code;
    bool operator==(const Answer &o) const { return state == o.state && code == o.code; }
};

Answer answer(const EnvelopeScanner &s)
{
    return {s.state(), s.code()};
}

// Feeds the input in pieces of the given sizes (cycled), checking that the answer only moves
// forward.
Answer feedInPieces(const QByteArray &input, const QList<int> &sizes)
{
    EnvelopeScanner s;
    Answer last = answer(s);
    qsizetype at = 0;
    for (int i = 0; at < input.size(); ++i) {
        const qsizetype n = qMin<qsizetype>(sizes.at(i % sizes.size()), input.size() - at);
        s.feed(QByteArrayView(input.constData() + at, n));
        at += n;
        const Answer now = answer(s);
        using S = EnvelopeScanner::State;
        const bool forward = now == last || (last.state == S::Pending) ||
                             (last.state == S::Found && now.state == S::NotFound);
        require(forward, "the answer only moves forward", input);
        require(s.success() == (now.state == S::Found && (*now.code == 200 || *now.code == 0)),
                "success() is Found with 200 or 0", input);
        last = now;
    }
    return last;
}

bool isStrictNumber(QByteArrayView t)
{
    qsizetype i = 0;
    const auto digits = [&] {
        const qsizetype from = i;
        while (i < t.size() && t[i] >= '0' && t[i] <= '9')
            ++i;
        return i > from;
    };
    if (i < t.size() && t[i] == '-')
        ++i;
    if (i < t.size() && t[i] == '0')
        ++i;
    else if (!digits())
        return false;
    if (i < t.size() && t[i] == '.') {
        ++i;
        if (!digits())
            return false;
    }
    if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
        ++i;
        if (i < t.size() && (t[i] == '+' || t[i] == '-'))
            ++i;
        if (!digits())
            return false;
    }
    return i == t.size();
}

bool isIntegerLiteral(QByteArrayView t)
{
    return isStrictNumber(t) && !t.contains('.') && !t.contains('e') && !t.contains('E');
}

// Walks a document QJsonDocument accepted: the first top-level member "code" (its raw value),
// and whether the document keeps to RFC 8259 where QJsonDocument is lax.
struct Walk
{
    Walk(const char *begin, const char *stop) : p(begin), end(stop) {}

    const char *p;
    const char *end;
    bool strict = true;
    bool object = false;
    bool hasCode = false;
    int codes = 0; // top-level members named "code"
    QByteArray codeToken;

    void space()
    {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
            ++p;
    }
    void string()
    {
        for (++p; p < end && *p != '"'; ++p) {
            if (uchar(*p) < 0x20)
                strict = false;
            if (*p == '\\') {
                ++p;
                if (p < end && (*p == 0 || !std::strchr("\"\\/bfnrtu", *p)))
                    strict = false;
            }
        }
        ++p;
    }
    void value()
    {
        space();
        if (p >= end)
            return;
        if (*p == '{' || *p == '[') {
            const char close = *p == '{' ? '}' : ']';
            ++p;
            space();
            while (p < end && *p != close) {
                if (close == '}') {
                    string();
                    space();
                    ++p; // ':'
                }
                value();
                space();
                if (p < end && *p == ',')
                    ++p;
                space();
            }
            ++p;
        } else if (*p == '"') {
            string();
        } else {
            const char *from = p;
            while (p < end && *p && std::strchr("+-.0123456789eEtruefalsn", *p))
                ++p;
            const QByteArrayView token(from, p - from);
            if (token != "true" && token != "false" && token != "null" && !isStrictNumber(token))
                strict = false;
        }
    }
    void document()
    {
        if (end - p >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0)
            p += 3;
        space();
        if (p >= end || *p != '{') {
            value(); // an array: only its strictness matters
            return;
        }
        object = true;
        ++p;
        space();
        while (p < end && *p != '}') {
            const char *name = p;
            string();
            const QByteArray rawName(name, p - name);
            space();
            ++p; // ':'
            space();
            const char *from = p;
            value();
            // Decoded by QJsonDocument, after an 'x' (it drops a raw BOM that starts a string).
            const QString decoded = QJsonDocument::fromJson("[\"x" + rawName.mid(1) + "]")
                                        .array()
                                        .at(0)
                                        .toString()
                                        .mid(1);
            if (decoded == u"code" && codes++ == 0) {
                hasCode = true;
                codeToken = QByteArray(from, p - from);
            }
            space();
            if (p < end && *p == ',')
                ++p;
            space();
        }
    }
};

// QJsonDocument refused only a number beyond double's range: the token that ends at the error
// offset is a JSON number all the same.
bool refusedOnlyForRange(const QByteArray &input, const QJsonParseError &error)
{
    if (error.error != QJsonParseError::IllegalNumber || error.offset > input.size())
        return false;
    qsizetype from = error.offset;
    while (from > 0 && input.at(from - 1) && std::strchr("+-.0123456789eE", input.at(from - 1)))
        --from;
    return isStrictNumber(QByteArrayView(input).sliced(from, error.offset - from));
}

void checkScanner(const QByteArray &input)
{
    EnvelopeScanner whole;
    whole.feed(input);
    const Answer a = answer(whole);

    require(feedInPieces(input, {1}) == a, "byte by byte", input);
    quint32 h = 2166136261u; // FNV-1a of the input: piece sizes that vary with it
    for (char c : input)
        h = (h ^ uchar(c)) * 16777619u;
    QList<int> sizes;
    for (int i = 0; i < 16; ++i) {
        h = h * 1103515245u + 12345u;
        sizes.append(1 + int((h >> 16) % (i % 2 ? 7 : 97)));
    }
    require(feedInPieces(input, sizes) == a, "pieces from the input's hash", input);
    QList<int> fromBytes;
    for (qsizetype i = 0; i < qMin<qsizetype>(input.size(), 32); ++i)
        fromBytes.append(1 + uchar(input.at(i)) % 13);
    if (!fromBytes.isEmpty())
        require(feedInPieces(input, fromBytes) == a, "pieces from the input's bytes", input);

    QJsonParseError error;
    const QJsonDocument qt = QJsonDocument::fromJson(input, &error);
    if (qt.isNull()) {
        // Refused: no Found unless the input merely stops early (QJsonDocument then reports
        // the error within the last few bytes) or QJsonDocument refused a number's range.
        if (a.state == EnvelopeScanner::State::Found)
            require(error.offset >= input.size() - 6 || refusedOnlyForRange(input, error),
                    "Found for an input QJsonDocument refuses", input);
        return;
    }
    Walk walk{input.constData(), input.constData() + input.size()};
    walk.document();
    if (!walk.strict) { // where QJsonDocument is lax, the scanner refuses
        require(a.state == EnvelopeScanner::State::NotFound, "NotFound for what is not RFC 8259",
                input);
        return;
    }
    Answer expected{EnvelopeScanner::State::NotFound, std::nullopt};
    bool ok = false;
    const qint64 v = walk.codeToken.toLongLong(&ok);
    if (walk.object && walk.hasCode && isIntegerLiteral(walk.codeToken) && ok) {
        expected = {EnvelopeScanner::State::Found, v};
        // QJsonDocument keeps the last of duplicate names, the scanner the first.
        if (walk.codes == 1) {
            const QJsonValue qtCode = qt.object().value(u"code");
            require(qtCode.toVariant().typeId() == QMetaType::LongLong && qtCode.toInteger() == v,
                    "QJsonDocument reads the same integer", input);
        }
    }
    require(a == expected, "the scanner agrees with QJsonDocument", input);
}

// --- SocialCatalog ---

QJsonValue resolvePointer(const QJsonObject &doc, const QString &ref)
{
    if (!ref.startsWith(u"#/"))
        return QJsonValue(QJsonValue::Undefined);
    QJsonValue at = doc;
    for (QString token : ref.mid(2).split(u'/')) {
        token.replace(QLatin1String("~1"), QLatin1String("/"))
            .replace(QLatin1String("~0"), QLatin1String("~"));
        if (!at.isObject() || !at.toObject().contains(token))
            return QJsonValue(QJsonValue::Undefined);
        at = at.toObject().value(token);
    }
    return at;
}

void checkRefs(const QJsonValue &v, const QJsonObject &doc, const QByteArray &input)
{
    if (v.isArray()) {
        for (const QJsonValue &item : v.toArray())
            checkRefs(item, doc, input);
    } else if (v.isObject()) {
        const QJsonObject o = v.toObject();
        for (auto it = o.begin(); it != o.end(); ++it) {
            if (it.key() == u"$ref") {
                const QJsonValue target = resolvePointer(doc, it.value().toString());
                require(it.value().isString() && (target.isObject() || target.isBool()),
                        "every $ref resolves inside the document", input);
            } else {
                checkRefs(it.value(), doc, input);
            }
        }
    }
}

void checkCatalog(const QByteArray &input)
{
    QString error;
    const auto catalog = SocialCatalog::parse(input, &error);
    if (!catalog) {
        require(error.startsWith(u"not JSON") || error == u"not an OpenAPI 3 document" ||
                    error == u"no operations under /api/v1/",
                "a refusal says why", input);
        return;
    }
    require(catalog->size() > 0, "some actions", input);
    for (const SocialAction &a : catalog->actions()) {
        require(catalog->find(a.path) == &a, "find() finds every action", input);
        require(a.method == "GET" || a.method == "POST", "GET or POST", input);
        require(a.path.startsWith(a.platform + u'/'), "the platform is the first segment", input);
        a.requiredParams();
    }
    catalog->platforms();

    SocialCatalog::DocumentOptions options;
    options.serverUrl = QStringLiteral("https://sy.example.com");
    options.publicName = [](const QString &p) {
        if (p.startsWith(u'a'))
            return QString(); // disabled
        if (p.startsWith(u'b'))
            return QStringLiteral("x"); // renamed, perhaps onto another
        return p;
    };
    for (const QJsonObject &doc : {catalog->document(options), catalog->document({})}) {
        checkRefs(doc, doc, input);
        QSet<QString> ids;
        const QJsonObject paths = doc.value(u"paths").toObject();
        for (auto it = paths.begin(); it != paths.end(); ++it) {
            require(it.key().startsWith(u"/v1/social-media/data/"), "paths under the prefix",
                    input);
            const QJsonObject op = it.value().toObject().begin().value().toObject();
            const QString id = op.value(u"operationId").toString();
            require(!id.isEmpty() && !ids.contains(id), "unique operationIds", input);
            ids.insert(id);
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray input(reinterpret_cast<const char *>(data), qsizetype(size));
    checkScanner(input);
    checkCatalog(input);
    return 0;
}
