#pragma once

#include <QString>
#include <QStringList>

// Upstream credentials never reach a client, a log or the window: text that came from an
// upstream (an error message, an error event) passes through scrub() first.
namespace KeyScrub {

// Replaces every occurrence of a known key, and anything shaped like a key (sk-..., pk_...,
// key-...), with "[redacted]".
QString scrub(QString text, const QStringList &knownKeys = {});

} // namespace KeyScrub
