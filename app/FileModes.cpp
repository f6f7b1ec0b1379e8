#include "FileModes.h"

#include <cerrno>
#include <cstring>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <sys/stat.h>
#include <unistd.h>

namespace {

QString octal(mode_t mode)
{
    return QStringLiteral("%1").arg(uint(mode & 07777), 4, 8, QLatin1Char('0'));
}

QString systemError()
{
    return QString::fromLocal8Bit(std::strerror(errno));
}

} // namespace

namespace FileModes {

bool makePrivateDirectory(const QString &dir, QString *error)
{
    const QString absolute = QFileInfo(dir).absoluteFilePath();
    if (QFileInfo(absolute).isDir())
        return true;
    const QString parent = QFileInfo(absolute).path();
    if (!QDir().mkpath(parent)) {
        *error = QStringLiteral("cannot create %1").arg(parent);
        return false;
    }
    // The mode at creation: no moment in which the directory is open to others.
    if (::mkdir(QFile::encodeName(absolute).constData(), 0700) == 0)
        return true;
    if (errno == EEXIST && QFileInfo(absolute).isDir())
        return true; // made by another process meanwhile
    *error = QStringLiteral("cannot create %1: %2").arg(absolute, systemError());
    return false;
}

QString restrictToOwner(const QString &path)
{
    const QByteArray native = QFile::encodeName(path);
    struct stat st = {};
    if (::stat(native.constData(), &st) != 0)
        return {}; // nothing there (yet): SQLite creates its files with the database's mode
    const mode_t wide = st.st_mode & (S_IRWXG | S_IRWXO);
    if (!wide)
        return {};
    if (S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX))
        return QStringLiteral("warning: %1 is a shared directory (%2, like /tmp); left as it is, "
                              "give the data its own directory")
            .arg(path, octal(st.st_mode));
    if (st.st_uid != ::geteuid())
        return QStringLiteral("warning: %1 is open to other users (%2) and belongs to another "
                              "user (uid %3); left as it is")
            .arg(path, octal(st.st_mode))
            .arg(st.st_uid);
    const mode_t tight = st.st_mode & ~(S_IRWXG | S_IRWXO) & 07777;
    if (::chmod(native.constData(), tight) != 0)
        return QStringLiteral("warning: cannot tighten permissions of %1 (%2): %3")
            .arg(path, octal(st.st_mode), systemError());
    return QStringLiteral("tightened permissions of %1 from %2 to %3")
        .arg(path, octal(st.st_mode), octal(tight));
}

} // namespace FileModes
