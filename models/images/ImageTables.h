#pragma once

#include "Migrations.h"

// The image-task family's tables (server/images/README.md, "Tables"):
//   image_tasks         one row per task: request, state, owner lease, hold and cost;
//   image_files         the images (PNG/JPEG/WebP bytes) until they expire;
//   webhook_deliveries  the outbox: one row per callback, with its schedule and lease;
//   webhook_attempts    every attempt made, for the delivery log;
//   image_settings      shared secrets (the link-signing key, the webhook signing secret).
namespace ImageTables {
const Migrations::Component &migrations();
}
