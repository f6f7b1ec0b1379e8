#pragma once

#include <QString>

// Owner-only files. The data directory and the files that hold secrets (the SQLite database
// with the image link and webhook signing secrets, its -wal and -shm files, the config file
// with upstream keys) must not be readable by other users of the machine.
namespace FileModes {

// Creates dir as 0700 (missing parents with the usual modes). An existing one is left as it
// is. Returns false, with *error, when it cannot.
bool makePrivateDirectory(const QString &dir, QString *error);

// Takes the group and other permissions away from path, a file or a directory (0644 becomes
// 0600, 0755 becomes 0700), when path is this user's own. Returns the line to log: what was
// changed ("tightened permissions of PATH from 0644 to 0600"), or why it was left open
// ("warning: ..." for another user's file, a shared directory such as /tmp, or a failed
// change); empty when there was nothing to do (no such path, or already owner-only).
QString restrictToOwner(const QString &path);

} // namespace FileModes
