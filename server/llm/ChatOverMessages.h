#pragma once

#include "Relay.h"

#include <QHash>

// Chat completions for a client, messages for the upstream (a vendorA or vendorC model whose
// provider speaks only messages): the request, the whole answer and the stream are
// translated, tool calls, stop reasons and usage included.
class ChatOverMessages : public Relay
{
public:
    explicit ChatOverMessages(const QString &clientModel);

    QString prepare(const QJsonObject &clientBody, const QString &upstreamModel) override;
    bool convertBody(const QByteArray &upstream, QByteArray *client) override;
    void onEvent(const SseEvent &event, QByteArray *out) override;
    QByteArray tail() const override;
    QByteArray errorEvent(const QString &message, const QString &type) const override;
    // The messages protocol requires max_tokens.
    static constexpr qint64 kDefaultMaxTokens = 4096;
    qint64 defaultMaxTokens() const override { return kDefaultMaxTokens; }

    static QString finishReason(const QString &stopReason);

private:
    QByteArray chunk(const QJsonObject &delta, const QJsonValue &finishReason) const;
    QJsonObject chatUsage() const;

    bool m_clientWantsUsage = false;
    QString m_id;
    qint64 m_created = 0;
    int m_toolCount = 0;
    QHash<int, int> m_toolIndexByBlock; // content block index -> tool_calls index
};
