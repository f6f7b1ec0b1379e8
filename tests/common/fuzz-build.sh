# Sourced by the fuzz_*.sh scripts, each of which builds one libFuzzer target with clang outside
# the main build and runs it. Needs clang and libclang-rt-14-dev (libFuzzer, sanitizers).
#   fuzz_workdir DIR: makes DIR/corpus and changes into DIR
#   fuzz_build NAME "PKG..." ARG...: compiles NAME there with the sanitizers, tests/common on
#       the include path, and pkg-config's flags for the packages; ARGs are the sources and any
#       more flags
#   fuzz_seeds FORMAT SEED...: writes the SEEDs to corpus/seed-0, seed-1, ... through printf
#       FORMAT ('%b' reads backslash escapes, '%s' takes a seed as it is)
fuzz_workdir() {
    mkdir -p "$1/corpus"
    cd "$1"
}

fuzz_build() {
    local name=$1 pkgs=$2
    shift 2
    # shellcheck disable=SC2046 # pkg-config's flags are words
    clang++ -std=c++20 -g -O1 -fPIC -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=undefined -fno-sanitize=vptr -Wall -Wextra \
        -I"$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)" $(pkg-config --cflags $pkgs) \
        "$@" $(pkg-config --libs $pkgs) -o "$name"
}

fuzz_seeds() {
    local format=$1 seed i=0
    shift
    for seed in "$@"; do
        # shellcheck disable=SC2059 # the format is the caller's
        printf "$format" "$seed" > "corpus/seed-$i"
        i=$((i + 1))
    done
}
