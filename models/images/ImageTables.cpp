#include "ImageTables.h"

namespace ImageTables {

const Migrations::Component &migrations()
{
    static const Migrations::Component c{
        QStringLiteral("images"),
        {
            {
                "CREATE TABLE image_tasks (id TEXT PRIMARY KEY, account_id BIGINT NOT NULL, "
                "key_id BIGINT NOT NULL DEFAULT 0, model TEXT NOT NULL, prompt TEXT NOT NULL, "
                "params TEXT NOT NULL, n INTEGER NOT NULL, status TEXT NOT NULL, "
                "error TEXT NOT NULL DEFAULT '', error_status INTEGER NOT NULL DEFAULT 0, "
                "error_code TEXT NOT NULL DEFAULT '', callback_url TEXT NOT NULL DEFAULT '', "
                "base_url TEXT NOT NULL DEFAULT '', price BIGINT NOT NULL, "
                "held BIGINT NOT NULL, cost BIGINT NOT NULL DEFAULT 0, "
                "produced INTEGER NOT NULL DEFAULT 0, request_id TEXT NOT NULL, "
                "owner TEXT NOT NULL DEFAULT '', lease_until BIGINT NOT NULL DEFAULT 0, "
                "created_ms BIGINT NOT NULL, started_ms BIGINT NOT NULL DEFAULT 0, "
                "completed_ms BIGINT NOT NULL DEFAULT 0, purged INTEGER NOT NULL DEFAULT 0)",
                "CREATE INDEX image_tasks_active ON image_tasks(status, lease_until)",
                "CREATE INDEX image_tasks_completed ON image_tasks(completed_ms)",
                "CREATE TABLE image_files (id TEXT PRIMARY KEY, task_id TEXT NOT NULL, "
                "idx INTEGER NOT NULL, mime TEXT NOT NULL, bytes BIGINT NOT NULL, data {BLOB}, "
                "expires_ms BIGINT NOT NULL, revised_prompt TEXT NOT NULL DEFAULT '')",
                "CREATE INDEX image_files_task ON image_files(task_id, idx)",
                "CREATE INDEX image_files_expires ON image_files(expires_ms)",
                "CREATE TABLE webhook_deliveries (id {ID}, task_id TEXT NOT NULL, "
                "account_id BIGINT NOT NULL, url TEXT NOT NULL, status TEXT NOT NULL, "
                "attempts INTEGER NOT NULL DEFAULT 0, scheduled INTEGER NOT NULL DEFAULT 0, "
                "manual INTEGER NOT NULL DEFAULT 0, next_ms BIGINT NOT NULL, "
                "lease_owner TEXT NOT NULL DEFAULT '', lease_until BIGINT NOT NULL DEFAULT 0, "
                "last_status INTEGER NOT NULL DEFAULT 0, last_error TEXT NOT NULL DEFAULT '', "
                "created_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL)",
                "CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_ms)",
                "CREATE INDEX webhook_deliveries_task ON webhook_deliveries(task_id)",
                "CREATE TABLE webhook_attempts (id {ID}, delivery_id BIGINT NOT NULL, "
                "attempt INTEGER NOT NULL, manual INTEGER NOT NULL, started_ms BIGINT NOT NULL, "
                "url TEXT NOT NULL, address TEXT NOT NULL, status INTEGER NOT NULL, "
                "error TEXT NOT NULL, duration_ms INTEGER NOT NULL, excerpt TEXT NOT NULL, "
                "instance TEXT NOT NULL)",
                "CREATE INDEX webhook_attempts_delivery ON webhook_attempts(delivery_id)",
                "CREATE TABLE image_settings (name TEXT PRIMARY KEY, value TEXT NOT NULL, "
                "created_ms BIGINT NOT NULL)",
            },
            // 2: the outbox also sends the core's events (server/WebhookOutbox.h: alerts),
            // whose body is fixed when they fire; a task's is built at each attempt (empty
            // here). task_id then holds the event's id.
            {
                "ALTER TABLE webhook_deliveries ADD COLUMN body TEXT NOT NULL DEFAULT ''",
            },
        }};
    return c;
}

} // namespace ImageTables
