#include "VideoExtract.h"

// Written by its owner; see the header.
