#pragma once

#include "ServerSettings.h"

#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QSet>
#include <QTimer>

class DatabaseService;
class KeyBudgets;
class WebhookOutbox;
struct LedgerEntry;
struct UsageRecord;

// The operator's alerts (config "alerts", AlertSettings):
//   balance_below       an account's balance dropped below a threshold (credits);
//   key_budget_percent  a key's spending in its budget period reached a percentage of the
//                       budget.
// Each fires once per crossing and again only after it recovered (the balance back at or
// above the threshold; the key's spending below the percentage, as when a new period starts
// or the budget is raised). A fired alert is emitted (fired(): the window's banner and tray
// message) and, with webhook_url set, POSTed through the webhook outbox a family offers
// (WebhookOutbox), in the transaction that records it fired.
//
// Watched on the server thread from what this process commits (DatabaseService's
// ledgerAppended and usageRecorded); nothing is watched when no alert is configured, and the
// billed path pays one queued call per charge when one is. A balance is known from the ledger
// entry itself (the newest of the account's within kBalanceSettleMs); a key's spending is read
// (coalesced: one read per key per kKeyReadMs) when it was charged. Whether each alert has fired is
// kept in the database (alert_states), so that instances sharing one see a crossing and fire it
// once; each keeps what it last saw in memory and writes only when what it sees differs.
class Alerts : public QObject
{
    Q_OBJECT
public:
    static constexpr int kKeyReadMs = 250;
    // Balances are judged by the newest entry of each account over this long: a transaction's
    // entries (a hold handed back, then the charge) count as the balance they leave.
    static constexpr int kBalanceSettleMs = 50;
    // alert_states is pruned at start and daily: fired budget alerts are kept this long after
    // they fired (longer than any period but a total budget's).
    static constexpr qint64 kKeepFiredMs = qint64(35) * 24 * 3600 * 1000;

    Alerts(DatabaseService &db, const AlertSettings &settings, KeyBudgets &budgets,
           QObject *parent = nullptr);

    // Where webhook alerts go (nullptr: none; webhook_url is then only logged as unsendable).
    void setOutbox(WebhookOutbox *outbox) { m_outbox = outbox; }

signals:
    // An alert that fired, as POSTed: {"id", "type": "balance_below" | "key_budget",
    // "created_at", "message", ...} (server/README.md, "Alerts").
    void fired(const QJsonObject &alert);

private:
    void ledger(const LedgerEntry &entry);
    void balances();
    void usage(const UsageRecord &record);
    void readKeys();
    // Records the alert's state when it differs from what was last seen; fires it when this
    // instance's write was the one that set it.
    void observe(const QString &subject, bool crossed, const QJsonObject &alert);

    DatabaseService &m_db;
    const AlertSettings m_settings;
    KeyBudgets &m_budgets;
    WebhookOutbox *m_outbox = nullptr;
    QHash<QString, bool> m_seen;        // subject -> fired, as last written or read here
    QHash<qint64, qint64> m_keyAccount; // keys charged since the last read -> their account
    QSet<qint64> m_unbudgeted;          // keys read without a budget (until keys change)
    QTimer m_keyTimer;
    QHash<qint64, QPair<qint64, qint64>> m_balances; // account -> newest (entry id, balance)
    QTimer m_balanceTimer;
    QTimer m_pruneTimer;
};
