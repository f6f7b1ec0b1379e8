#include "Cli.h"
#include "MemoryTrim.h"

#include <QCoreApplication>

int main(int argc, char *argv[])
{
    MemoryTrim::prepare(); // before any thread starts
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("switchyard"));
    QCoreApplication::setApplicationVersion(QStringLiteral(SWITCHYARD_VERSION));
    return runCli(QCoreApplication::arguments());
}
