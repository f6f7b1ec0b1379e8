// libFuzzer target for server/upstream/JsonScan (tests/upstream/fuzz_json_scan.sh): the relays
// run it over every upstream answer, which is untrusted. Properties: nothing crashes or reads
// outside the input (ASan, UBSan); a span find() returns lies inside the text; replaceString()
// changes the text only when find() saw a string there; members() and isObject() with keys give
// find()'s spans in one pass (isObject() only for a whole object); and isObject() agrees with
// QJsonDocument
// on texts whose strings hold no backslash, control byte or byte above 0x7e and whose numbers
// have no fraction or exponent (where the two are known to differ: QJsonDocument accepts invalid
// escapes, raw control characters, ".5" and "1.", and refuses numbers out of a double's range).
#include "upstream/JsonScan.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <QByteArray>
#include <QJsonDocument>

namespace {

bool comparable(const QByteArray &s)
{
    bool inString = false;
    for (qsizetype i = 0; i < s.size(); ++i) {
        const uchar c = uchar(s[i]);
        if (c == '"')
            inString = !inString;
        else if (c == '\\' || c < 0x20 || c > 0x7e)
            return false;
        else if (!inString && (c == '.' || c == 'e' || c == 'E'))
            return false;
    }
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray json(reinterpret_cast<const char *>(data), qsizetype(size));
    for (const auto &path : {std::initializer_list<QByteArrayView>{"model"},
                             std::initializer_list<QByteArrayView>{"usage", "prompt_tokens"},
                             std::initializer_list<QByteArrayView>{"a", "b", "c"}}) {
        const JsonScan::Span span = JsonScan::find(json, path);
        if (span.found() && (span.begin < 0 || span.end > json.size() || span.begin >= span.end))
            abort();
        QByteArray copy = json;
        const bool replaced = JsonScan::replaceString(copy, path, "\"x\"");
        const bool string = span.found() && json[span.begin] == '"';
        if (replaced != string || (!replaced && copy != json))
            abort();
    }
    const bool object = JsonScan::isObject(json);
    const auto keys = {QByteArrayView("model"), QByteArrayView("usage"), QByteArrayView("a")};
    JsonScan::Span walked[3], validated[3];
    JsonScan::members(json, keys, walked);
    if (JsonScan::isObject(json, keys, validated) != object)
        abort();
    int n = 0;
    for (QByteArrayView key : keys) {
        const JsonScan::Span one = JsonScan::find(json, {key});
        if (walked[n].begin != one.begin || walked[n].end != one.end)
            abort();
        if (object ? validated[n].begin != one.begin || validated[n].end != one.end
                   : validated[n].found())
            abort();
        ++n;
    }
    if (comparable(json)) {
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
        if (object != (error.error == QJsonParseError::NoError && doc.isObject()))
            abort();
    }
    return 0;
}
