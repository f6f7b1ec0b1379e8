#pragma once

#include <QJsonObject>
#include <QString>
#include <QStringList>

class AddressEngine;

// The address services as plain calls: one JSON request in, one JSON answer out, exactly what
// POST /v1/address/{endpoint} answers. The HTTP routes and the window's address testing tool
// both go through here, so they cannot disagree. Each call answers from the engine it is given
// (its engines, its imported data, its search index). Thread-safe; no I/O.
namespace AddressApi {

constexpr int kMaxText = 2000; // characters of `text` the text endpoints accept

struct Reply
{
    int status = 200;
    QJsonObject body; // the answer when status is 200
    QString error;    // a sentence for the client otherwise
    QString param;    // the request field at fault, when there is one
    // False when the answer is "no data for this" (e.g. no zip codes imported): not charged.
    bool billable = true;
    bool ok() const { return status == 200; }
};

// The endpoints served so far, as in the path: transfer-coord, extract-phone, ...
QStringList endpoints();
Reply call(const AddressEngine &engine, const QString &endpoint, const QJsonObject &request);

} // namespace AddressApi
