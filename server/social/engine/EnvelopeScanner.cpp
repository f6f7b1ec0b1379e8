#include "EnvelopeScanner.h"

// Written by its owner; see the header.
