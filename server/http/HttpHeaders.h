#pragma once

#include <QByteArray>
#include <QList>
#include <QPair>

// Header fields in the order they were received or are to be sent: (name, value).
using HttpHeaders = QList<QPair<QByteArray, QByteArray>>;
