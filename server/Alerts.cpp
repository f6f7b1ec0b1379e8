#include "Alerts.h"

#include "DatabaseService.h"
#include "KeyBudgets.h"
#include "Money.h"
#include "WebhookOutbox.h"

#include <QDateTime>
#include <QJsonDocument>
#include <QRandomGenerator>

namespace {

QString newAlertId()
{
    return QStringLiteral("alr_%1").arg(QRandomGenerator::system()->generate64(), 16, 16,
                                        QLatin1Char('0'));
}

QString iso(const QDateTime &t)
{
    return t.toUTC().toString(Qt::ISODateWithMs);
}

} // namespace

Alerts::Alerts(DatabaseService &db, const AlertSettings &settings, KeyBudgets &budgets,
               QObject *parent)
    : QObject(parent), m_db(db), m_settings(settings), m_budgets(budgets)
{
    m_keyTimer.setSingleShot(true);
    m_keyTimer.setInterval(kKeyReadMs);
    connect(&m_keyTimer, &QTimer::timeout, this, &Alerts::readKeys);
    m_balanceTimer.setSingleShot(true);
    m_balanceTimer.setInterval(kBalanceSettleMs);
    connect(&m_balanceTimer, &QTimer::timeout, this, &Alerts::balances);
    // What alert_states keeps stays bounded: at start, then daily.
    const auto prune = [this] {
        const qint64 cutoff = QDateTime::currentMSecsSinceEpoch() - kKeepFiredMs;
        m_db.write<int>(
            this, [cutoff](Store &s) { return s.pruneAlertStates(cutoff); },
            [](const DbResult<int> &r) {
                if (!r.ok())
                    qWarning("alerts: old states not pruned: %s", qPrintable(r.error));
            });
    };
    prune();
    m_pruneTimer.setInterval(24 * 3600 * 1000);
    connect(&m_pruneTimer, &QTimer::timeout, this, prune);
    m_pruneTimer.start();
    if (!m_settings.balanceBelow.isEmpty())
        connect(&db, &DatabaseService::ledgerAppended, this, &Alerts::ledger);
    if (!m_settings.keyBudgetPercent.isEmpty()) {
        connect(&db, &DatabaseService::usageRecorded, this, &Alerts::usage);
        connect(&db, &DatabaseService::apiKeysChanged, this, [this] { m_unbudgeted.clear(); });
    }
}

void Alerts::ledger(const LedgerEntry &entry)
{
    auto it = m_balances.find(entry.accountId);
    if (it == m_balances.end())
        m_balances.insert(entry.accountId, {entry.id, entry.balanceAfter});
    else if (entry.id > it->first)
        *it = {entry.id, entry.balanceAfter};
    if (!m_balanceTimer.isActive())
        m_balanceTimer.start();
}

void Alerts::balances()
{
    const auto newest = std::exchange(m_balances, {});
    for (auto it = newest.cbegin(); it != newest.cend(); ++it) {
        const qint64 account = it.key();
        const qint64 balance = it.value().second;
        for (const qint64 threshold : m_settings.balanceBelow) {
            QJsonObject alert{
                {"type", "balance_below"},
                {"account_id", QString::number(account)},
                {"threshold", Money::formatCredits(threshold)},
                {"balance", Money::formatCredits(balance)},
                {"message",
                 QStringLiteral("The balance of account %1 is %2 credits, below the "
                                "alert threshold of %3.")
                     .arg(account)
                     .arg(Money::formatCredits(balance), Money::formatCredits(threshold))}};
            observe(QStringLiteral("balance:%1:%2").arg(account).arg(threshold),
                    balance < threshold, alert);
        }
    }
}

void Alerts::usage(const UsageRecord &record)
{
    if (record.keyId <= 0 || record.cost <= 0 || m_unbudgeted.contains(record.keyId))
        return;
    m_keyAccount.insert(record.keyId, record.accountId);
    if (!m_keyTimer.isActive())
        m_keyTimer.start();
}

void Alerts::readKeys()
{
    struct Key
    {
        qint64 id = 0;
        qint64 accountId = 0;
        QString name;
        std::optional<KeyRules::Budget> budget;
        QDateTime start, end;
        qint64 spent = 0;
    };
    const auto keys = std::exchange(m_keyAccount, {});
    const QDateTime now = m_budgets.now();
    const QTimeZone zone = m_budgets.zone();
    m_db.read<QList<Key>>(
        this,
        [keys, now, zone](Store &s) {
            QList<Key> out;
            for (auto it = keys.cbegin(); it != keys.cend(); ++it) {
                Key k;
                k.id = it.key();
                k.accountId = it.value();
                const auto record = s.apiKey(k.accountId, k.id);
                if (record && !record->isRevoked() && record->rules.budget) {
                    k.name = record->name;
                    k.budget = record->rules.budget;
                    std::tie(k.start, k.end) = KeyRules::periodAt(k.budget->period, now, zone);
                    k.spent = s.keySpent(k.id, k.start.toMSecsSinceEpoch(),
                                         k.end.isValid() ? k.end.toMSecsSinceEpoch() : 0);
                }
                out.append(k);
            }
            return out;
        },
        [this](const DbResult<QList<Key>> &r) {
            if (!r.ok()) {
                qWarning("alerts: keys' spending not read: %s", qPrintable(r.error));
                return;
            }
            for (const Key &k : r.value) {
                if (!k.budget) {
                    m_unbudgeted.insert(k.id);
                    continue;
                }
                for (const int percent : m_settings.keyBudgetPercent) {
                    const bool reached = k.spent * 100 >= qint64(percent) * k.budget->amount;
                    QJsonObject alert{
                        {"type", "key_budget"},
                        {"key_id", QString::number(k.id)},
                        {"key_name", k.name},
                        {"account_id", QString::number(k.accountId)},
                        {"percent", percent},
                        {"budget", Money::formatCredits(k.budget->amount)},
                        {"period", KeyRules::periodName(k.budget->period)},
                        {"spent", Money::formatCredits(k.spent)},
                        {"resets_at", k.end.isValid() ? QJsonValue(iso(k.end)) : QJsonValue()},
                        {"message",
                         QStringLiteral("API key '%1' has spent %2 of its budget of %3 credits "
                                        "per %4: %5%, at or above the alert's %6%.")
                             .arg(k.name, Money::formatCredits(k.spent),
                                  Money::formatCredits(k.budget->amount),
                                  KeyRules::periodName(k.budget->period))
                             .arg(k.spent * 100 / k.budget->amount)
                             .arg(percent)}};
                    observe(QStringLiteral("budget:%1:%2:%3")
                                .arg(k.id)
                                .arg(k.start.toMSecsSinceEpoch())
                                .arg(percent),
                            reached, alert);
                }
            }
        });
}

void Alerts::observe(const QString &subject, bool crossed, const QJsonObject &alert)
{
    const auto seen = m_seen.constFind(subject);
    if (seen != m_seen.cend() && *seen == crossed)
        return;
    m_seen.insert(subject, crossed);
    QJsonObject shown = alert;
    const QDateTime now = QDateTime::currentDateTimeUtc();
    shown.insert(QStringLiteral("id"), newAlertId());
    shown.insert(QStringLiteral("created_at"), iso(now));
    WebhookOutbox *outbox = crossed && !m_settings.webhookUrl.isEmpty() ? m_outbox : nullptr;
    WebhookOutbox::Message message{
        shown.value("id").toString(), shown.value("account_id").toString().toLongLong(),
        m_settings.webhookUrl, QJsonDocument(shown).toJson(QJsonDocument::Compact),
        now.toMSecsSinceEpoch()};
    m_db.write<bool>(
        this,
        [subject, crossed, outbox, message](Store &s) {
            const bool changed = s.setAlertState(subject, crossed, message.nowMs);
            if (changed && outbox)
                outbox->enqueue(s, message);
            return changed;
        },
        [this, subject, crossed, outbox, shown](const DbResult<bool> &r) {
            if (!r.ok()) {
                m_seen.remove(subject); // seen again on the next change
                qWarning("alerts: %s not recorded: %s", qPrintable(subject), qPrintable(r.error));
                return;
            }
            if (!r.value || !crossed)
                return; // another instance fired it, or it recovered
            qInfo("alert %s: %s", qPrintable(shown.value("id").toString()),
                  qPrintable(shown.value("message").toString()));
            if (outbox)
                outbox->wake();
            else if (!m_settings.webhookUrl.isEmpty())
                qWarning("alerts: alerts.webhook_url is set, but no family of this build keeps "
                         "a webhook outbox; the alert was not sent");
            emit fired(shown);
        });
}
