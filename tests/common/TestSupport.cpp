#include "TestSupport.h"

#include "DatabaseService.h"

#include <latch>
#include <QProcess>
#include <QRandomGenerator>
#include <QSqlError>
#include <QSqlQuery>
#include <QUrl>

TestDatabase::TestDatabase(const QString &backend)
{
    if (backend == u"sqlite") {
        m_config = DatabaseConfig::sqlite(m_dir.filePath(QStringLiteral("switchyard.db")));
        m_ready = true;
        return;
    }
    const QString base = qEnvironmentVariable("SWITCHYARD_TEST_PG_URL");
    if (base.isEmpty()) {
        m_skip = QStringLiteral("SWITCHYARD_TEST_PG_URL is not set (tests/run-all.sh starts a "
                                "PostgreSQL server and sets it)");
        return;
    }
    // A fresh database per test keeps runs independent.
    m_dbName = QStringLiteral("sy_test_%1").arg(QRandomGenerator::global()->generate64(), 0, 16);
    m_adminUrl = base;
    {
        const DatabaseConfig admin = DatabaseConfig::fromUrl(base);
        QSqlDatabase db = admin.open(QStringLiteral("testadmin"));
        QSqlQuery q(db);
        if (!q.exec(QStringLiteral("CREATE DATABASE %1").arg(m_dbName))) {
            m_skip = QStringLiteral("cannot create a test database: ") + q.lastError().text();
            return;
        }
    }
    QUrl url(base);
    url.setPath(QLatin1Char('/') + m_dbName);
    m_url = url.toString();
    m_config = DatabaseConfig::fromUrl(m_url);
    m_ready = true;
}

TestDatabase::~TestDatabase()
{
    if (m_dbName.isEmpty() || !m_ready)
        return;
    const DatabaseConfig admin = DatabaseConfig::fromUrl(m_adminUrl);
    QSqlDatabase db = admin.open(QStringLiteral("testadmin"));
    QSqlQuery q(db);
    q.exec(QStringLiteral("DROP DATABASE IF EXISTS %1 WITH (FORCE)").arg(m_dbName));
}

void addBackendRows()
{
    QTest::addColumn<QString>("backend");
    QTest::newRow("sqlite") << QStringLiteral("sqlite");
    QTest::newRow("postgres") << QStringLiteral("postgres");
}

QString runProgram(const QString &program, const QStringList &args, QByteArray *out)
{
    QProcess p;
    p.start(program, args);
    p.waitForFinished(30000);
    if (out)
        *out = p.readAllStandardOutput().trimmed();
    return p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0
               ? QString()
               : QString::fromUtf8(p.readAllStandardError());
}

QStringList TestDatabase::cliArgs() const
{
    QStringList args{QStringLiteral("--data-dir"), dataDir()};
    if (!m_url.isEmpty())
        args << QStringLiteral("--database") << m_url;
    return args;
}

struct WriterHold::State
{
    std::latch held{1};
    std::latch release{1};
    bool released = false;
};

WriterHold::WriterHold(DatabaseService &db) : m_state(std::make_shared<State>())
{
    db.write<bool>(
        nullptr,
        [state = m_state](Store &) {
            state->held.count_down();
            state->release.wait();
            return true;
        },
        [](const DbResult<bool> &) {});
    m_state->held.wait();
}

void WriterHold::release()
{
    if (!std::exchange(m_state->released, true))
        m_state->release.count_down();
}
