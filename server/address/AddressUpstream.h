#pragma once

#include "AddressApi.h"
#include "AddressUpstreamConfig.h"
#include "RequestContext.h"

#include <QByteArray>
#include <QJsonObject>
#include <QObject>
#include <QStringList>

class UpstreamClient;

// The optional upstream address provider (config `address.upstream`): a service speaking the
// same POST /v1/address/{name} API that answers what local data cannot. When the local engine's
// answer has status NOT_FOUND or NO_DATA and the endpoint is in `endpoints`, the request body
// goes upstream unchanged with the provider's key; its 200 JSON answer with a `status` of its own
// (neither NO_DATA nor NOT_FOUND, no `error`) is returned (header `x-address-source: upstream`)
// and billed like a local one. Anything else returns the local answer, billed as the local
// answer is, with a `message` saying what the upstream did, so the client still gets a clear
// answer and pays nothing for an upstream that knew no more.
class AddressUpstream : public QObject
{
    Q_OBJECT
public:
    AddressUpstream(AddressUpstreamConfig config, QObject *parent = nullptr);

    // True when `local` (a 200 answer of `endpoint`) should be asked upstream.
    bool wants(const QString &endpoint, const AddressApi::Reply &local) const;
    // Answers ctx asynchronously: the upstream's answer, or `local` when the upstream fails.
    void forward(const ContextPtr &ctx, const QString &endpoint, const AddressApi::Reply &local,
                 qint64 price);

private:
    AddressUpstreamConfig m_config;
    UpstreamClient *m_client;
};
