#pragma once

class QAbstractItemModel;
class QString;
class QTableView;
class QWidget;

// A table view of records as the panels show them: whole rows, one selected at a time, read
// only, no word wrap, compact rows without a vertical header, the last column stretched and the
// others resizable by the operator. objectName names it for tests.
QTableView *makeRecordTable(QAbstractItemModel *model, const QString &objectName, QWidget *parent);

// A table of few records that the operator sorts (keys, tokens): whole rows, one selected at a
// time, read only, without a vertical header, columns sized to their contents and the last one
// stretched; sorted by clicking a header, through a proxy (the view's model, its child) that
// sorts by sortRole, first by sortColumn ascending.
QTableView *makeSortedTable(QAbstractItemModel *model, int sortRole, int sortColumn,
                            const QString &objectName, QWidget *parent);
