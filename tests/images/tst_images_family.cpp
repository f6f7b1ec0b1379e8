// The image family's pure parts: the config section and its errors, the webhook schedule,
// signed links, image type sniffing, and Standard Webhooks signatures against the published
// test vector.

#include "ImageLinks.h"
#include "ImagesConfig.h"
#include "WebhookDispatcher.h"

#include <QJsonDocument>
#include <QTest>

class TestImagesFamily : public QObject
{
    Q_OBJECT

private slots:
    void defaults()
    {
        const ImagesConfig c = ImagesConfig::defaults();
        QVERIFY(c.model("gpt-image-1"));
        QCOMPARE(c.model("dall-e-2")->pricePerImage, 20000000);
        QCOMPARE(c.linkTtlS, 3600);
        QVERIFY(!c.provider("openai")->unusableReason().isEmpty()); // no key until configured
        QCOMPARE(c.webhooks.policy.schemes, QStringList{"https"});
        QCOMPARE(c.webhooks.policy.maxRedirects, 0);
        QCOMPARE(c.webhooks.policy.totalTimeoutMs, 10000);
    }

    // The contract's schedule: 2, 4, 8, 16, then the 30 s cap.
    void schedule()
    {
        WebhookSettings w;
        QCOMPARE(w.backoffAfter(1), 2000);
        QCOMPARE(w.backoffAfter(2), 4000);
        QCOMPARE(w.backoffAfter(3), 8000);
        QCOMPARE(w.backoffAfter(4), 16000);
        QCOMPARE(w.backoffAfter(5), 30000);
        QCOMPARE(w.backoffAfter(40), 30000);
        w.scheduleScale = 0.05;
        QCOMPARE(w.backoffAfter(1), 100);
        QCOMPARE(w.backoffAfter(5), 1500);
    }

    void parses()
    {
        const QJsonObject section =
            QJsonDocument::fromJson(
                "{\"providers\": {\"sd\": {\"type\": \"openai\", \"base_url\": "
                "\"http://10.1.2.3:7860/v1\", \"keys\": [\"k\"], \"response_format\": \"url\"}},"
                " \"models\": [{\"id\": \"sdxl\", \"provider\": \"sd\", \"price_per_image\": "
                "\"0.02\"}], \"default_model\": \"sdxl\", \"public_base_url\": "
                "\"https://sy.example.com/\", \"webhooks\": {\"retries\": 3, \"backoff_ms\": 500, "
                "\"fetch\": {\"allow_cidrs\": [\"10.9.0.0/16\"]}}}")
                .object();
        const ImagesConfig c = ImagesConfig::fromJson(section);
        QCOMPARE(c.defaultModel, QStringLiteral("sdxl"));
        QCOMPARE(c.model("sdxl")->pricePerImage, 20000000);
        QCOMPARE(c.model("sdxl")->upstreamModel, QStringLiteral("sdxl"));
        QCOMPARE(c.provider("sd")->responseFormat, QStringLiteral("url"));
        QVERIFY(c.provider("sd")->unusableReason().isEmpty());
        QCOMPARE(c.publicBaseUrl, QStringLiteral("https://sy.example.com"));
        QCOMPARE(c.webhooks.retries, 3);
        QCOMPARE(c.webhooks.backoffAfter(2), 1000);
        QCOMPARE(c.webhooks.policy.allowCidrs.size(), 1);
        QVERIFY(c.model("gpt-image-1")); // the defaults stay
    }

    void errors_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("names");
        QTest::newRow("provider type")
            << QByteArray("{\"providers\":{\"x\":{\"type\":\"sd\"}}}") << "images.providers.x.type";
        QTest::newRow("provider format")
            << QByteArray("{\"providers\":{\"x\":{\"response_format\":\"png\"}}}")
            << "images.providers.x.response_format";
        QTest::newRow("provider url") << QByteArray("{\"providers\":{\"x\":{\"base_url\":\"ftp://"
                                                    "h\"}}}")
                                      << "images.providers.x.base_url";
        QTest::newRow("model id") << QByteArray("{\"models\":[{\"provider\":\"openai\"}]}")
                                  << "images.models[0].id";
        QTest::newRow("model provider")
            << QByteArray("{\"models\":[{\"id\":\"m\",\"provider\":\"nope\"}]}")
            << "images.models[0].provider";
        QTest::newRow("model price")
            << QByteArray("{\"models\":[{\"id\":\"m\",\"provider\":\"openai\","
                          "\"price_per_image\":0.04}]}")
            << "images.models[0].price_per_image";
        // Ten images at this price would not fit in 64 bits of credit units.
        QTest::newRow("model price too high")
            << QByteArray("{\"models\":[{\"id\":\"m\",\"provider\":\"openai\","
                          "\"price_per_image\":\"1000000.000000001\"}]}")
            << "images.models[0].price_per_image";
        QTest::newRow("default model")
            << QByteArray("{\"default_model\":\"nope\"}") << "images.default_model";
        QTest::newRow("public base")
            << QByteArray("{\"public_base_url\":\"sy.example.com\"}") << "images.public_base_url";
        QTest::newRow("ttl") << QByteArray("{\"link_ttl_s\":5}") << "images.link_ttl_s";
        QTest::newRow("concurrency")
            << QByteArray("{\"max_concurrent\":0}") << "images.max_concurrent";
        QTest::newRow("retries") << QByteArray("{\"webhooks\":{\"retries\":-1}}")
                                 << "images.webhooks.retries";
        QTest::newRow("scale") << QByteArray("{\"webhooks\":{\"schedule_scale\":2}}")
                               << "images.webhooks.schedule_scale";
        QTest::newRow("lease") << QByteArray("{\"webhooks\":{\"lease_ms\":5000}}")
                               << "images.webhooks.lease_ms";
        QTest::newRow("http callbacks") << QByteArray("{\"webhooks\":{\"fetch\":{\"allow_http\":"
                                                      "true}}}")
                                        << "images.webhooks.fetch.allow_http";
        QTest::newRow("cidr") << QByteArray("{\"webhooks\":{\"fetch\":{\"allow_cidrs\":[\"x\"]}}}")
                              << "images.webhooks.fetch.allow_cidrs";
        QTest::newRow("webhooks type") << QByteArray("{\"webhooks\":[]}") << "images.webhooks";
    }

    void errors()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, names);
        try {
            ImagesConfig::fromJson(QJsonDocument::fromJson(json).object());
            QFAIL("accepted");
        } catch (const std::runtime_error &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(names), e.what());
        }
    }

    void links()
    {
        const QByteArray secret = "0123456789abcdef0123456789abcdef";
        const QString url =
            ImageLinks::url("https://sy.example.com", secret, "img_abc", "png", 2000);
        QVERIFY(url.startsWith("https://sy.example.com/v1/images/files/img_abc.png?expires=2000&"
                               "signature="));
        const QString sig = url.section("signature=", 1);
        QCOMPARE(ImageLinks::verify(secret, "img_abc", "2000", sig, 1999),
                 ImageLinks::Verdict::Valid);
        QCOMPARE(ImageLinks::verify(secret, "img_abc", "2000", sig, 2000),
                 ImageLinks::Verdict::Expired);
        QCOMPARE(ImageLinks::verify(secret, "img_abd", "2000", sig, 1999),
                 ImageLinks::Verdict::Invalid);
        QCOMPARE(ImageLinks::verify(secret, "img_abc", "2001", sig, 1999),
                 ImageLinks::Verdict::Invalid);
        QCOMPARE(ImageLinks::verify("another key", "img_abc", "2000", sig, 1999),
                 ImageLinks::Verdict::Invalid);
        QCOMPARE(ImageLinks::verify(secret, "img_abc", "", sig, 1999),
                 ImageLinks::Verdict::Invalid);
        QCOMPARE(ImageLinks::verify(secret, "img_abc", "2000", sig.chopped(1), 1999),
                 ImageLinks::Verdict::Invalid);
        QCOMPARE(ImageLinks::verify(secret, "img_abc", "2000", sig + "A", 1999),
                 ImageLinks::Verdict::Invalid);
        QCOMPARE(ImageLinks::verify(secret, "img_abc", "2000", {}, 1999),
                 ImageLinks::Verdict::Invalid);
    }

    void sniff()
    {
        QCOMPARE(ImageLinks::sniffMime(QByteArray("\x89PNG\r\n\x1a\n....", 12)),
                 QStringLiteral("image/png"));
        QCOMPARE(ImageLinks::sniffMime("\xff\xd8\xff\xe0...."), QStringLiteral("image/jpeg"));
        QCOMPARE(ImageLinks::sniffMime(QByteArray("RIFF\x10\0\0\0WEBPVP8 ", 16)),
                 QStringLiteral("image/webp"));
        QCOMPARE(ImageLinks::sniffMime("GIF89a..."), QStringLiteral("image/gif"));
        QCOMPARE(ImageLinks::sniffMime("<html>"), QString());
        QCOMPARE(ImageLinks::sniffMime({}), QString());
        QCOMPARE(ImageLinks::extensionFor("image/jpeg"), QStringLiteral("jpeg"));
        QCOMPARE(ImageLinks::extensionFor("image/png"), QStringLiteral("png"));
    }

    // The vector every Standard Webhooks library tests against.
    void standardWebhooksVector()
    {
        const auto headers = WebhookDispatcher::signatureHeaders(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
            "{\"test\": 2432232314}");
        QCOMPARE(headers.size(), 3);
        QCOMPARE(headers[0], QByteArray("webhook-id: msg_p5jXN8AQM9LWM0D4loKWxJek"));
        QCOMPARE(headers[1], QByteArray("webhook-timestamp: 1614265330"));
        QCOMPARE(headers[2],
                 QByteArray("webhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="));
        const QString fresh = WebhookDispatcher::newSecret();
        QVERIFY(fresh.startsWith("whsec_"));
        QCOMPARE(QByteArray::fromBase64(fresh.mid(6).toLatin1()).size(), 32);
        QVERIFY(fresh != WebhookDispatcher::newSecret());
    }
};

QTEST_GUILESS_MAIN(TestImagesFamily)
#include "tst_images_family.moc"
