#pragma once

#include "ServiceFamily.h"

#include <QStringList>

class QTextStream;

// The switchyard-server command line: serve, and every family's commands
// (ServiceFamily::commands(): keys, tokens, credits, ...). Returns the exit code; results go to
// stdout, messages and errors to stderr.
int runCli(const QStringList &arguments);
// The same with these families (a test adds its own) and streams: results on out, messages and
// errors on err.
int runCli(const QStringList &arguments, FamilyList families, QTextStream &out, QTextStream &err);
