#include "AppOptions.h"
#include "DatabaseService.h"
#include "llm/ProviderRegistry.h"
#include "MainWindow.h"
#include "ServerHost.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>

int main(int argc, char *argv[])
{
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
        const ServerSettings settings = options.settings();
        DatabaseService db(options.database(settings));
        db.start();
        ProviderRegistry registry(settings.gateway, settings.configPath);
        registry.startCatalogSync(&db);
        ServerHost host(db, settings, &registry);
        QString error;
        bool serving = host.start(options.listenAddress, options.listenPort, &error);
        if (!serving && options.listenPort != 0) {
            // The port is taken (another instance?): serve on a free one rather than not at all.
            serving = host.start(options.listenAddress, 0, &error);
            if (serving)
                QMessageBox::information(nullptr, QStringLiteral("Switchyard"),
                                         QStringLiteral("Port %1 is in use; the API listens on %2 "
                                                        "instead.")
                                             .arg(options.listenPort)
                                             .arg(host.url().toString()));
        }
        if (!serving)
            QMessageBox::warning(nullptr, QStringLiteral("Switchyard"),
                                 QStringLiteral("The API server could not start: %1").arg(error));
        MainWindow window(db, serving ? &host : nullptr);
        window.setProviderRegistry(&registry);
        window.show();
        const int rc = QApplication::exec();
        host.stop();
        db.stop();
        return rc;
    } catch (const std::exception &e) {
        QMessageBox::critical(nullptr, QStringLiteral("Switchyard"), QString::fromUtf8(e.what()));
        return 1;
    }
}
