#pragma once

#include "ErrorEnvelope.h"

// The messages protocol's error envelope, {"type":"error","error":{"type","message"}}, with its
// own error types (billing_error, not_found_error, overloaded_error, ...). Its answers carry
// the request id under the name the protocol's clients read, request-id, besides X-Request-Id.
ErrorStyle messagesErrorStyle();
