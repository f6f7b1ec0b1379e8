#include "SocialCatalog.h"

// Written by its owner; see the header.
