#pragma once

#include <functional>
#include <optional>
#include <QByteArray>
#include <QHash>
#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QString>
#include <QStringList>

// The upstream's catalog of social-data actions, read from its OpenAPI 3.x description (TikHub
// publishes about 1,000 operations, every path under /api/v1/), and Switchyard's own OpenAPI
// document built from it. Pure data, no I/O; immutable once parsed, so one parsed catalog is
// shared read-only by every server thread (std::shared_ptr<const SocialCatalog>).

// One query parameter of an action, as the upstream declares it.
struct SocialParam
{
    QString name; // case-sensitive, as declared
    bool required = false;
    QString description;
    QJsonObject schema; // the parameter's schema as the upstream wrote it (may be empty)
    QJsonValue example; // the parameter's example, if any (undefined when none)
};

// One action: an operation of the upstream's description.
struct SocialAction
{
    QString path;      // after the common prefix, no leading slash: "douyin/app/v3/fetch_one_video"
    QString platform;  // the first segment, as the upstream names it ("douyin")
    QByteArray method; // "GET" or "POST" (one operation per path; GET wins if both exist)
    QString operationId;
    QString summary;
    QString description;
    QStringList tags;
    QList<SocialParam> params; // query parameters only, in declaration order
    QJsonObject requestBody;   // POST: the operation's requestBody as written (may hold $refs)

    // The names of the required query parameters, in declaration order.
    QStringList requiredParams() const;
};

// A platform and how many actions it has.
struct SocialPlatform
{
    QString name;
    int actions = 0;
};

class SocialCatalog
{
public:
    // Parses an OpenAPI 3.x document (JSON). Every path must start with `prefix` ("/api/v1/");
    // paths outside it are skipped. Query parameters may be inline or $ref'd to
    // #/components/parameters. Operations other than get and post are skipped. Fails (nullopt,
    // *error says why: "not JSON", "not an OpenAPI 3 document", "no operations under /api/v1/")
    // when the document is unusable.
    static std::optional<SocialCatalog> parse(const QByteArray &document, QString *error,
                                              const QString &prefix = QStringLiteral("/api/v1/"));

    // The action at `path` (no leading slash, exact and case-sensitive), or null.
    const SocialAction *find(QStringView path) const;
    const QList<SocialAction> &actions() const { return m_actions; }
    // Every platform with its action count, sorted by name.
    QList<SocialPlatform> platforms() const;
    qsizetype size() const { return m_actions.size(); }
    QString title() const { return m_title; }
    QString version() const { return m_version; } // the upstream's info.version
    // The upstream document's components.schemas (request bodies refer to them).
    const QJsonObject &schemas() const { return m_schemas; }

    // What Switchyard's own document shows.
    struct DocumentOptions
    {
        QString serverUrl; // the base URL the client sees: "https://sy.example.com"
        QString title = QStringLiteral("Switchyard social-media data");
        QString version; // Switchyard's version
        QString pathPrefix = QStringLiteral("/v1/social-media/data/");
        // The client-facing name of an upstream platform, or an empty string to leave the
        // platform out (disabled). Unset: every platform, under its own name.
        std::function<QString(const QString &upstreamPlatform)> publicName;
    };
    // An OpenAPI 3.1 document of the actions: one path per action, pathPrefix + the public
    // platform name + the rest of the action's path; the method; the query parameters with
    // their required flags, descriptions and schemas (type string when the upstream gave none);
    // summary, description, operationId (unique), tags; a POST's requestBody with only the
    // schemas it refers to (transitively) copied into components.schemas; responses 200 (the
    // envelope: code integer, data), 400, 401, 402, 403, 429, 503 and 504 with the error body
    // {error: {message, type}}; security: the API key as Authorization: Bearer or X-API-Key
    // (components.securitySchemes bearerAuth and apiKeyHeader); servers: [serverUrl].
    // The result validates against the OpenAPI 3.1 schema.
    QJsonObject document(const DocumentOptions &options) const;

private:
    QList<SocialAction> m_actions;
    QHash<QString, qsizetype> m_index;
    QString m_title;
    QString m_version;
    QJsonObject m_schemas;
};
