#include "Confirm.h"

#include <QMessageBox>
#include <QPushButton>

QMessageBox *confirmThen(QWidget *parent, const QString &objectName, const QString &title,
                         const QString &text, const QString &confirmLabel,
                         std::function<void()> onConfirm)
{
    auto *box = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::NoButton, parent);
    box->setObjectName(objectName);
    box->setAttribute(Qt::WA_DeleteOnClose);
    QPushButton *confirm = box->addButton(confirmLabel, QMessageBox::DestructiveRole);
    confirm->setObjectName(QStringLiteral("confirmButton"));
    QPushButton *cancel = box->addButton(QMessageBox::Cancel);
    cancel->setObjectName(QStringLiteral("cancelButton"));
    // The safe answer is the one Enter gives.
    box->setDefaultButton(cancel);
    box->setEscapeButton(cancel);
    QObject::connect(box, &QMessageBox::finished, box,
                     [box, confirm, onConfirm = std::move(onConfirm)] {
                         if (box->clickedButton() == confirm && onConfirm)
                             onConfirm();
                     });
    box->open();
    return box;
}
