#!/usr/bin/env bash
# audio-bench.sh [BUILD_DIR] [--runs N]
#
# The audio routes through a throwaway switchyard-server on the local engines, each figure the
# median of N runs (default 3) with its spread:
#   - speech: time to the first byte and characters per second for 200 and 4,000 characters;
#   - transcription: audio seconds per wall second, one request on a server pinned to one core,
#     and two concurrent requests on a server with both cores;
#   - memory: the server's peak RSS growth while it receives and parses a 25 MiB upload
#     (the request is then refused by its language field, so only the receiving is measured),
#     against the file's size.
# Needs curl, ffmpeg (for the 25 MiB fixture) and taskset. Raw outputs stay in
# BUILD_DIR/bench-results/audio/.
set -euo pipefail

say() { printf '[audio-bench] %s\n' "$*" >&2; }
die() {
    printf '[audio-bench] ERROR: %s\n' "$*" >&2
    exit 1
}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BUILD=""
RUNS=3
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS=${2:?}; shift 2 ;;
        -*) die "unknown option $1" ;;
        *) BUILD=$1; shift ;;
    esac
done
BUILD=$(cd "${BUILD:-$SRC/build}" && pwd)
SERVER=$BUILD/app/switchyard-server
[ -x "$SERVER" ] || die "no $SERVER: build the switchyard-server target first"
for tool in curl ffmpeg taskset python3; do
    command -v "$tool" > /dev/null || die "$tool is needed"
done
OUT=$BUILD/bench-results/audio
mkdir -p "$OUT"
WORK=$(mktemp -d)
PID=""
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2> /dev/null && wait "$PID" 2> /dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

DATA=$WORK/data
KEY=$("$SERVER" keys create --name bench --data-dir "$DATA")
"$SERVER" credits grant --amount 1000000 --data-dir "$DATA" > /dev/null
printf '{"audio":{"workers":2,"queue":16}}\n' > "$WORK/config.json"

# start_server [taskset cpu list]: sets PID and URL.
start_server() {
    local pin=()
    [ -n "${1:-}" ] && pin=(taskset -c "$1")
    "${pin[@]}" "$SERVER" serve --listen 127.0.0.1:0 --data-dir "$DATA" \
        --config "$WORK/config.json" 2> "$WORK/server.log" > /dev/null &
    PID=$!
    for _ in $(seq 100); do
        URL=$(grep -o 'http://127.0.0.1:[0-9]*' "$WORK/server.log" | head -1 || true)
        [ -n "$URL" ] && return 0
        sleep 0.1
    done
    die "the server did not start: $(tail -5 "$WORK/server.log")"
}
stop_server() {
    kill "$PID" && wait "$PID" 2> /dev/null || true
    PID=""
}
median() { python3 -c 'import sys,statistics as s; v=sorted(map(float,sys.argv[1:])); print("%.3f (%.3f-%.3f)" % (s.median(v), v[0], v[-1]))' "$@"; }

speech() { # text file -> prints "ttfb total bytes"
    curl -s -o /dev/null -w '%{time_starttransfer} %{time_total} %{size_download}\n' \
        -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
        --data @"$1" "$URL/v1/audio/speech"
}
transcribe() { # file -> prints wall seconds
    curl -s -o "$OUT/transcript.json" -w '%{time_total}\n' -H "Authorization: Bearer $KEY" \
        -F model=rapid -F "file=@$1" "$URL/v1/audio/transcriptions"
}

SENT='The quick brown fox jumps over the lazy dog while the river runs past the old mill. '
python3 - "$SENT" "$WORK" << 'PY'
import json, sys
sent, work = sys.argv[1], sys.argv[2]
for n in (200, 4000):
    text = (sent * (n // len(sent) + 1))[:n]
    json.dump({"model": "vendorE-tts-nano", "voice": "alloy", "input": text},
              open(f"{work}/speech{n}.json", "w"))
PY

# ---- memory: a fresh server, a warm-up, then a 25 MiB upload.
start_server
speech "$WORK/speech200.json" > /dev/null
ffmpeg -hide_banner -loglevel error -f lavfi -i "sine=frequency=440:sample_rate=16000" \
    -t 819 -c:a pcm_s16le -ac 1 -f wav - | head -c 26214000 > "$WORK/25mib.wav"
FILE_BYTES=$(stat -c %s "$WORK/25mib.wav")
grow=()
for _ in $(seq "$RUNS"); do
    stop_server
    start_server
    speech "$WORK/speech200.json" > /dev/null
    sleep 0.3
    base=$(awk '/VmRSS/ {print $2}' "/proc/$PID/status")
    curl -s -o /dev/null -H "Authorization: Bearer $KEY" -F model=rapid -F language=fr \
        -F "file=@$WORK/25mib.wav" "$URL/v1/audio/transcriptions"
    peak=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status")
    grow+=("$(python3 -c "print(($peak - $base) * 1024 / $FILE_BYTES)")")
done
stop_server
MEM=$(median "${grow[@]}")

# ---- speech: first byte and characters per second (both cores).
start_server
speech "$WORK/speech200.json" > /dev/null
t200=(); c200=(); t4k=(); c4k=()
for _ in $(seq "$RUNS"); do
    read -r ttfb total _ < <(speech "$WORK/speech200.json")
    t200+=("$(python3 -c "print($ttfb * 1000)")")
    c200+=("$(python3 -c "print(200 / $total)")")
    read -r ttfb total _ < <(speech "$WORK/speech4000.json")
    t4k+=("$(python3 -c "print($ttfb * 1000)")")
    c4k+=("$(python3 -c "print(4000 / $total)")")
done

# A minute of speech for transcription, from the server itself.
python3 - "$SENT" "$WORK" << 'PY'
import json, sys
sent, work = sys.argv[1], sys.argv[2]
json.dump({"model": "vendorE-tts-nano", "voice": "alloy", "input": (sent * 14)[:1150]},
          open(f"{work}/minute.json", "w"))
PY
curl -s -o "$WORK/minute.wav" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    --data @"$WORK/minute.json" "$URL/v1/audio/speech"
AUDIO_S=$(python3 -c "import os; print((os.path.getsize('$WORK/minute.wav') - 44) / 192000)")

# ---- transcription, two concurrent requests on both cores.
two=()
for _ in $(seq "$RUNS"); do
    start=$(date +%s.%N)
    transcribe "$WORK/minute.wav" > /dev/null &
    other=$!
    transcribe "$WORK/minute.wav" > /dev/null
    wait "$other"
    end=$(date +%s.%N)
    two+=("$(python3 -c "print(2 * $AUDIO_S / ($end - $start))")")
done
stop_server

# ---- transcription, one request on one core.
start_server 0
transcribe "$WORK/minute.wav" > /dev/null # loads a recognizer
one=()
for _ in $(seq "$RUNS"); do
    wall=$(transcribe "$WORK/minute.wav")
    one+=("$(python3 -c "print($AUDIO_S / $wall)")")
done
stop_server

{
    echo "audio-bench: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $RUNS runs each, median (min-max)"
    echo
    echo "| figure | value | target |"
    echo "|---|---|---|"
    echo "| speech, 200 characters: first byte (ms) | $(median "${t200[@]}") | < 50 |"
    echo "| speech, 200 characters: characters/s | $(median "${c200[@]}") | |"
    echo "| speech, 4,000 characters: first byte (ms) | $(median "${t4k[@]}") | |"
    echo "| speech, 4,000 characters: characters/s | $(median "${c4k[@]}") | |"
    printf '| transcription, one request, one core: audio s per wall s (%.0f s of audio) | %s | >= 5 |\n' \
        "$AUDIO_S" "$(median "${one[@]}")"
    echo "| transcription, two concurrent, two cores: audio s per wall s | $(median "${two[@]}") | |"
    echo "| peak RSS growth receiving a 25 MiB upload, times the file size | $MEM | < 2 |"
} | tee "$OUT/results.md"
