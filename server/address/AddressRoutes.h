#pragma once

class Pipeline;
struct ServerSettings;

// POST /v1/address/*: thin HTTP routes over the offline address engine (server/address),
// billed per request through the pipeline.
void registerAddressRoutes(Pipeline &pipeline, const ServerSettings &settings);
