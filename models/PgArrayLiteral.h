#pragma once

#include <QString>

// A PostgreSQL array literal, one element at a time: {1,NULL,"text \"quoted\""}.
// Bound as text and cast in the statement (QPSQL binds no arrays).
class ArrayLiteral
{
public:
    ArrayLiteral() { m_text += u'{'; }
    void add(qint64 value)
    {
        next();
        m_text += QString::number(value);
    }
    void addNull()
    {
        next();
        m_text += QStringLiteral("NULL");
    }
    void add(const QString &value) // a null string is ""
    {
        next();
        m_text += u'"';
        for (const QChar c : value) {
            if (c == u'"' || c == u'\\')
                m_text += u'\\';
            m_text += c;
        }
        m_text += u'"';
    }
    QString take()
    {
        m_text += u'}';
        return std::move(m_text);
    }

private:
    void next()
    {
        if (m_text.size() > 1)
            m_text += u',';
    }
    QString m_text;
};
