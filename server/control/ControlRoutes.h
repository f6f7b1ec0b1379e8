#pragma once

class Pipeline;

// /api/v1/*: credits, usage and API-key management for control tokens.
void registerControlRoutes(Pipeline &pipeline);
