#pragma once

#include <functional>
#include <QString>

class QMessageBox;
class QWidget;

// Asks for confirmation of a destructive step without a nested event loop: a window-modal
// QMessageBox (named `objectName`, a child of `parent`) that deletes itself and runs onConfirm
// only when its confirm button (named "confirmButton") is clicked. Tests find the box with
// findChild and answer it like a user would.
QMessageBox *confirmThen(QWidget *parent, const QString &objectName, const QString &title,
                         const QString &text, const QString &confirmLabel,
                         std::function<void()> onConfirm);
