#pragma once

#include "Migrations.h"

// The address family's tables: imported zip codes and points of interest, shared by every
// instance using the database; coordinates GCJ-02, aliases separated by '|'.
namespace AddressTables {
const Migrations::Component &migrations();
}
