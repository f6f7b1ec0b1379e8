// Rules every address endpoint shares (AddressApi::call, the code behind POST /v1/address/*):
// the text bounds and errors, and answers that are valid text for hostile input.
#include "AddressApi.h"
#include "AddressEngine.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QTest>

namespace {

// The suite's engine, as one server has: no imported data, engines built on first use.
const AddressEngine &engine()
{
    static const AddressEngine e;
    return e;
}

QStringList textEndpoints()
{
    QStringList all = AddressApi::endpoints();
    all.removeAll(QStringLiteral("transfer-coord"));
    return all;
}

QString repeat(const QString &unit, int times)
{
    QString s;
    for (int i = 0; i < times; ++i)
        s += unit;
    return s;
}

// True when every string anywhere in the value is well-formed UTF-16 (no lone surrogate).
bool wellFormed(const QJsonValue &v, QString *bad)
{
    if (v.isString()) {
        const QString s = v.toString();
        for (qsizetype i = 0; i < s.size(); ++i) {
            if (s[i].isHighSurrogate() && i + 1 < s.size() && s[i + 1].isLowSurrogate()) {
                ++i;
                continue;
            }
            if (s[i].isSurrogate()) {
                *bad = s;
                return false;
            }
        }
        return true;
    }
    if (v.isArray()) {
        for (const QJsonValue &item : v.toArray())
            if (!wellFormed(item, bad))
                return false;
    }
    if (v.isObject()) {
        const QJsonObject o = v.toObject();
        for (auto it = o.begin(); it != o.end(); ++it)
            if (!wellFormed(it.value(), bad))
                return false;
    }
    return true;
}

} // namespace

class TestAddressApi : public QObject
{
    Q_OBJECT
private slots:
    void everyEndpointIsServed()
    {
        // The sixteen endpoints (server/address/README.md).
        QCOMPARE(AddressApi::endpoints().size(), 16);
        const AddressApi::Reply r = AddressApi::call(engine(), QStringLiteral("teleport"), {});
        QCOMPARE(r.status, 404);
    }

    void badText_data()
    {
        QTest::addColumn<QJsonValue>("text");
        QTest::addColumn<QString>("message");
        QTest::newRow("missing") << QJsonValue(QJsonValue::Undefined) << "required";
        QTest::newRow("null") << QJsonValue(QJsonValue::Null) << "required";
        QTest::newRow("number") << QJsonValue(42) << "required";
        QTest::newRow("array") << QJsonValue(QJsonArray{"杭州"}) << "required";
        QTest::newRow("empty") << QJsonValue("") << "must not be empty";
        QTest::newRow("spaces") << QJsonValue(" \t\n\u3000") << "must not be empty";
        QTest::newRow("zero-width and BOM")
            << QJsonValue(QStringLiteral("\u200b\ufeff\u200b")) << "must not be empty";
        QTest::newRow("2001 characters")
            << QJsonValue(repeat(QStringLiteral("杭"), 2001)) << "got 2001";
        QTest::newRow("2001 non-BMP characters")
            << QJsonValue(repeat(QStringLiteral("𠮷"), 2001)) << "got 2001";
    }
    void badText()
    {
        QFETCH(QJsonValue, text);
        QFETCH(QString, message);
        for (const QString &endpoint : textEndpoints()) {
            QJsonObject body;
            if (!text.isUndefined())
                body.insert("text", text);
            const AddressApi::Reply r = AddressApi::call(engine(), endpoint, body);
            QVERIFY2(r.status == 400, qPrintable(endpoint));
            QCOMPARE(r.param, QStringLiteral("text"));
            QVERIFY2(r.error.contains(message),
                     qPrintable(endpoint + QStringLiteral(": ") + r.error));
        }
    }

    // The bound counts characters: 2,000 characters outside the BMP (4,000 UTF-16 units) pass.
    void limitCountsCharacters()
    {
        const QString text = QStringLiteral("浙江省杭州市") + repeat(QStringLiteral("𠮷"), 1994);
        for (const QString &endpoint : textEndpoints()) {
            const AddressApi::Reply r = AddressApi::call(engine(), endpoint, {{"text", text}});
            QVERIFY2(r.ok(), qPrintable(endpoint + QStringLiteral(": ") + r.error));
        }
    }

    // Hostile text: non-BMP characters glued to address parts, digits, punctuation, repetition.
    // Every answer is valid text and every span's word is the text at its offsets.
    void hostileTextGivesWellFormedAnswers()
    {
        const QStringList pieces = {"浙江省", "杭州市", "余杭区",      "文一西路", "969号",   "𠮷",
                                    "😀",      "村",     "13812345678", "3号楼",    "-",       "，",
                                    "a",      "收件人", "张三",        "\u200b",   "０５７１"};
        QRandomGenerator rng(20261121);
        for (int round = 0; round < 60; ++round) {
            QString text;
            const int parts = 1 + int(rng.bounded(40));
            for (int i = 0; i < parts; ++i)
                text += pieces.at(int(rng.bounded(qsizetype(pieces.size()))));
            QList<uint> chars = text.toUcs4();
            for (const QString &endpoint : textEndpoints()) {
                const AddressApi::Reply r = AddressApi::call(engine(), endpoint, {{"text", text}});
                QVERIFY2(r.ok(), qPrintable(endpoint + QStringLiteral(": ") + r.error));
                QString bad;
                QVERIFY2(wellFormed(r.body, &bad),
                         qPrintable(endpoint + QStringLiteral(" on ") + text +
                                    QStringLiteral(": lone surrogate in ") + bad));
                // Spans: start/end in characters, word = the text there.
                std::function<void(const QJsonValue &)> check = [&](const QJsonValue &v) {
                    if (v.isArray()) {
                        for (const QJsonValue &item : v.toArray())
                            check(item);
                    } else if (v.isObject()) {
                        const QJsonObject o = v.toObject();
                        if (o.value("start").isDouble() && o.value("end").isDouble() &&
                            o.value("word").isString()) {
                            const qint64 s = o.value("start").toInteger();
                            const qint64 e = o.value("end").toInteger();
                            QVERIFY(0 <= s && s <= e && e <= chars.size());
                            const QString at = QString::fromUcs4(
                                reinterpret_cast<const char32_t *>(chars.constData() + s),
                                qsizetype(e - s));
                            QCOMPARE(o.value("word").toString(), at);
                        }
                        for (auto it = o.begin(); it != o.end(); ++it)
                            check(it.value());
                    }
                };
                check(r.body);
            }
        }
    }

    void geocodeNotFoundShape()
    {
        const AddressApi::Reply r =
            AddressApi::call(engine(), QStringLiteral("geocode"), {{"text", "没有地址的一句话"}});
        QVERIFY(r.ok());
        QCOMPARE(r.body.value("status").toString(), QStringLiteral("NOT_FOUND"));
        QCOMPARE(r.body.value("offline_geocode").toObject().keys(),
                 (QStringList{"divcode", "gcj02", "level", "matched", "wgs84"}));
    }
};

QTEST_GUILESS_MAIN(TestAddressApi)
#include "tst_address_api.moc"
