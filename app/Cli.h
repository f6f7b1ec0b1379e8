#pragma once

#include <QStringList>

// The switchyard-server command line: serve, keys, tokens, credits, address. Returns the exit code;
// errors go to stderr.
int runCli(const QStringList &arguments);
