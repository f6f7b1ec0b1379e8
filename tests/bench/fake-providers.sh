# Sourced by gateway-bench.sh, thread-costs.sh and social-bench.sh.
# fake_providers FAKE_URL: the "gateway" member of a server's config file with every provider
# pointing at tests/fake_upstream on FAKE_URL, the default ones too (the openrouter catalog is
# fetched at start), so that a run makes no connection beyond loopback.
fake_providers() {
    cat <<JSON
"gateway":{"providers":{
   "openai":{"type":"openai","base_url":"$1/v1","keys":["k1"]},
   "anthropic":{"type":"anthropic","base_url":"$1/v1","keys":["k2"]},
   "deepseek":{"type":"anthropic","base_url":"$1/v1","keys":["k3"]},
   "openrouter":{"type":"catalog","base_url":"$1/api/v1","keys":["k4"]}}}
JSON
}
