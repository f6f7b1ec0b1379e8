#pragma once

class QAbstractItemModel;
class QString;
class QTableView;
class QWidget;

// A table view of records as the panels show them: whole rows, one selected at a time, read
// only, no word wrap, compact rows without a vertical header, the last column stretched and the
// others resizable by the operator. objectName names it for tests.
QTableView *makeRecordTable(QAbstractItemModel *model, const QString &objectName, QWidget *parent);
