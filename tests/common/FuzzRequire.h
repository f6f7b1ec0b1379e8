#pragma once

#include <QByteArray>

#include <cstdio>

// For the libFuzzer targets' properties: when one fails, print which and the input (hex), and
// trap, so that libFuzzer keeps the input as a crash. Header-only: the targets are built with
// clang outside the main build, from their source files alone.
inline void require(bool ok, const char *what, const QByteArray &input)
{
    if (ok)
        return;
    fprintf(stderr, "property failed: %s\ninput: %s\n", what, input.toHex().constData());
    __builtin_trap();
}
