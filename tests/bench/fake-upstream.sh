# Sourced by gateway-bench.sh, thread-costs.sh and social-bench.sh (after wait-listen.sh): the
# fake upstream (tests/fake_upstream) those scripts put behind a throwaway server.

# start_fake DIR LOG FAKE [ARG...]: starts the fake (the binary FAKE, with ARGs) on an ephemeral
# loopback port, its stderr in LOG, and sets FAKE_PID and FAKE_URL. The fake reads stdin: a FIFO
# in DIR that this shell holds open (fd 7), so that the fake also goes when the shell dies hard.
start_fake() {
    local dir=$1 log=$2 bin=$3
    shift 3
    mkfifo "$dir/fake.stdin"
    exec 7<>"$dir/fake.stdin"
    "$bin" --listen 127.0.0.1:0 "$@" <"$dir/fake.stdin" >"$dir/fake.out" 2>"$log" &
    FAKE_PID=$!
    FAKE_URL=$(wait_listen "$dir/fake.out" "$FAKE_PID" fake_upstream)
}

# fake_providers FAKE_URL: the "gateway" member of a server's config file with every provider
# pointing at the fake on FAKE_URL, the default ones too (the openrouter catalog is fetched at
# start), so that a run makes no connection beyond loopback.
fake_providers() {
    cat <<JSON
"gateway":{"providers":{
   "openai":{"type":"openai","base_url":"$1/v1","keys":["k1"]},
   "anthropic":{"type":"anthropic","base_url":"$1/v1","keys":["k2"]},
   "deepseek":{"type":"anthropic","base_url":"$1/v1","keys":["k3"]},
   "openrouter":{"type":"catalog","base_url":"$1/api/v1","keys":["k4"]}}}
JSON
}
