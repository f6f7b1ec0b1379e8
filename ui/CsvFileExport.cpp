#include "CsvFileExport.h"

#include "DatabaseService.h"

#include <QTimer>

CsvFileExport::CsvFileExport(DatabaseService &db, const QString &path, PageReader read,
                             QObject *parent)
    : QObject(parent), m_db(db), m_file(path), m_read(std::move(read))
{
}

CsvFileExport *CsvFileExport::start(DatabaseService &db, const QString &path,
                                    const QByteArray &header, PageReader read, QObject *parent)
{
    auto *job = new CsvFileExport(db, path, std::move(read), parent);
    // Reported from the event loop, so that the caller has connected to the signals.
    QTimer::singleShot(0, job, [job, header] {
        if (!job->m_file.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
            job->m_file.write(header) != header.size())
            return job->fail(
                tr("Cannot write %1: %2").arg(job->m_file.fileName(), job->m_file.errorString()));
        job->readFrom(0);
    });
    return job;
}

void CsvFileExport::readFrom(qint64 cursor)
{
    m_db.read<Page>(
        this, [read = m_read, cursor](Store &s) { return read(s, cursor); },
        [this](const DbResult<Page> &r) {
            if (!r.ok())
                return fail(tr("The records could not be read: %1").arg(r.error));
            if (m_file.write(r.value.bytes) != r.value.bytes.size())
                return fail(tr("Cannot write %1: %2").arg(m_file.fileName(), m_file.errorString()));
            m_rows += r.value.rows;
            emit progress(m_rows);
            if (r.value.next)
                return readFrom(r.value.next);
            if (!m_file.flush())
                return fail(tr("Cannot write %1: %2").arg(m_file.fileName(), m_file.errorString()));
            m_file.close();
            emit finished(true, m_rows, {});
            deleteLater();
        });
}

void CsvFileExport::fail(const QString &message)
{
    m_file.close();
    m_file.remove(); // a cut file must not pass for a whole one
    emit finished(false, m_rows, message);
    deleteLater();
}
