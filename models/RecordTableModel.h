#pragma once

#include <algorithm>
#include <functional>
#include <QAbstractTableModel>
#include <QList>

// Shared row bookkeeping for the table models over Records.h value types. Rows are kept sorted
// by record id (ascending for keys and tokens, newest first for ledger and usage), which lets
// every update be expressed as precise insert/remove/change signals: views keep their
// selection and scroll position while the server writes.
// A template without Q_OBJECT: each concrete model carries its own meta-object.
template <class T> class RecordTableModel : public QAbstractTableModel
{
public:
    enum Role
    {
        SortRole = Qt::UserRole, // the raw value behind the display text (times as ms, units)
        IdRole,                  // the record id
    };
    enum class Order
    {
        Ascending,
        NewestFirst
    };

    int rowCount(const QModelIndex &parent = QModelIndex()) const override
    {
        return parent.isValid() ? 0 : int(m_rows.size());
    }

    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override
    {
        if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
            return {};
        const T &record = m_rows.at(index.row());
        if (role == IdRole)
            return record.id;
        return cellData(record, index.column(), role);
    }

    const T &recordAt(int row) const { return m_rows.at(row); }
    // Row of the record with this id, or -1.
    int rowOfId(qint64 id) const
    {
        const int row = lowerBound(id);
        return row < m_rows.size() && m_rows.at(row).id == id ? row : -1;
    }

protected:
    RecordTableModel(Order order, QObject *parent) : QAbstractTableModel(parent), m_order(order) {}

    virtual QVariant cellData(const T &record, int column, int role) const = 0;

    bool before(qint64 a, qint64 b) const { return m_order == Order::Ascending ? a < b : a > b; }

    void sortByOrder(QList<T> &records) const
    {
        std::sort(records.begin(), records.end(),
                  [this](const T &a, const T &b) { return before(a.id, b.id); });
    }

    void resetRows(QList<T> records)
    {
        sortByOrder(records);
        beginResetModel();
        m_rows = std::move(records);
        endResetModel();
    }

    // Brings the rows to exactly `fresh` with the smallest set of row signals; `same` decides
    // whether a kept row needs a dataChanged.
    void mergeRows(QList<T> fresh, const std::function<bool(const T &, const T &)> &same)
    {
        sortByOrder(fresh);
        const int lastColumn = columnCount() - 1;
        qsizetype row = 0;
        qsizetype next = 0;
        while (next < fresh.size()) {
            if (row < m_rows.size() && m_rows.at(row).id == fresh.at(next).id) {
                if (!same(m_rows.at(row), fresh.at(next))) {
                    m_rows[row] = fresh.at(next);
                    emit dataChanged(index(int(row), 0), index(int(row), lastColumn));
                }
                ++row;
                ++next;
            } else if (row < m_rows.size() && before(m_rows.at(row).id, fresh.at(next).id)) {
                qsizetype end = row;
                while (end < m_rows.size() && before(m_rows.at(end).id, fresh.at(next).id))
                    ++end;
                removeRowRange(row, end);
            } else {
                qsizetype end = next;
                while (end < fresh.size() &&
                       (row == m_rows.size() || before(fresh.at(end).id, m_rows.at(row).id)))
                    ++end;
                beginInsertRows(QModelIndex(), int(row), int(row + end - next - 1));
                for (qsizetype i = next; i < end; ++i)
                    m_rows.insert(row + (i - next), fresh.at(i));
                endInsertRows();
                row += end - next;
                next = end;
            }
        }
        if (row < m_rows.size())
            removeRowRange(row, m_rows.size());
    }

    // Inserts records at their sorted places, skipping ids already present; runs that land in
    // the same place (the usual case: a burst of new records at the top) become one signal.
    void insertRecords(QList<T> incoming)
    {
        sortByOrder(incoming);
        incoming.erase(std::unique(incoming.begin(), incoming.end(),
                                   [](const T &a, const T &b) { return a.id == b.id; }),
                       incoming.end());
        qsizetype i = 0;
        while (i < incoming.size()) {
            const int pos = lowerBound(incoming.at(i).id);
            if (pos < m_rows.size() && m_rows.at(pos).id == incoming.at(i).id) {
                ++i;
                continue;
            }
            qsizetype end = i + 1;
            while (end < incoming.size() &&
                   (pos == m_rows.size() || before(incoming.at(end).id, m_rows.at(pos).id)))
                ++end;
            beginInsertRows(QModelIndex(), pos, int(pos + end - i - 1));
            for (qsizetype k = i; k < end; ++k)
                m_rows.insert(pos + (k - i), incoming.at(k));
            endInsertRows();
            i = end;
        }
    }

    // Drops rows past `maxRows` from the end (the oldest for NewestFirst models).
    bool trimTo(int maxRows)
    {
        if (m_rows.size() <= maxRows)
            return false;
        removeRowRange(maxRows, m_rows.size());
        return true;
    }

    QList<T> m_rows;

private:
    int lowerBound(qint64 id) const
    {
        const auto it = std::lower_bound(m_rows.cbegin(), m_rows.cend(), id,
                                         [this](const T &r, qint64 v) { return before(r.id, v); });
        return int(it - m_rows.cbegin());
    }

    void removeRowRange(qsizetype from, qsizetype to)
    {
        beginRemoveRows(QModelIndex(), int(from), int(to - 1));
        m_rows.remove(from, to - from);
        endRemoveRows();
    }

    Order m_order;
};
