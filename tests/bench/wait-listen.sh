# Sourced by the benchmark scripts (the caller defines die).
# wait_listen LOG PID NAME: prints the http://127.0.0.1:PORT from the "listening on ..." line that
# a switchyard-server or fake_upstream (or the reference gateway's loopback shim) writes to LOG;
# dies when PID exits first or nothing comes in 30 s.
wait_listen() {
    local url=""
    for _ in $(seq 1 300); do
        url=$(sed -n 's/.*listening on \(http:\/\/127\.0\.0\.1:[0-9][0-9]*\).*/\1/p' "$1" | head -n1)
        [ -z "$url" ] || { echo "$url"; return 0; }
        kill -0 "$2" 2>/dev/null || { cat "$1" >&2; die "$3 exited at start"; }
        sleep 0.1
    done
    cat "$1" >&2
    die "$3 did not report its address in 30 s"
}
