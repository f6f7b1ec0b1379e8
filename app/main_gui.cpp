#include "AppOptions.h"
#include "MainWindow.h"
#include "MemoryTrim.h"
#include "ServerHost.h"
#include "Services.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>

int main(int argc, char *argv[])
{
    MemoryTrim::prepare(); // before any thread starts
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("switchyard"));
    QApplication::setApplicationDisplayName(QStringLiteral("Switchyard"));
    QApplication::setApplicationVersion(QStringLiteral(SWITCHYARD_VERSION));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Switchyard operator console with the API server."));
    parser.addHelpOption();
    parser.addVersionOption();
    AppOptions::addTo(parser, true);
    parser.process(app);

    try {
        const AppOptions options = AppOptions::from(parser, true);
        options.secureFiles();
        Services services(options.settings(), options.database());
        services.start();
        QString error;
        bool serving = services.listen(options.listenAddress, options.listenPort, &error);
        if (!serving && options.listenPort != 0) {
            // The port is taken (another instance?): serve on a free one rather than not at all.
            serving = services.listen(options.listenAddress, 0, &error);
            if (serving)
                QMessageBox::information(nullptr, QStringLiteral("Switchyard"),
                                         QStringLiteral("Port %1 is in use; the API listens on %2 "
                                                        "instead.")
                                             .arg(options.listenPort)
                                             .arg(services.host()->url().toString()));
        }
        if (!serving)
            QMessageBox::warning(nullptr, QStringLiteral("Switchyard"),
                                 QStringLiteral("The API server could not start: %1").arg(error));
        MemoryTrimmer trimmer;
        MainWindow window(services);
        window.show();
        const int rc = QApplication::exec();
        services.stop();
        return rc;
    } catch (const std::exception &e) {
        QMessageBox::critical(nullptr, QStringLiteral("Switchyard"), QString::fromUtf8(e.what()));
        return 1;
    }
}
