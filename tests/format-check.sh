#!/usr/bin/env bash
# format-check.sh: checks that every tracked *.cpp and *.h is formatted as the repository's
# .clang-format says, with Debian 12's clang-format 14 in dry-run mode (-Werror). Changes
# nothing; lists the files that drifted and exits 1 when there are any. CI runs it
# (.ci/run); run it before a commit:
#   bash tests/format-check.sh           check
#   bash tests/format-check.sh --fix     reformat the files that drifted, in place
# Env: CLANG_FORMAT, the program to use (default clang-format-14, else clang-format).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

fix=0
case "${1:-}" in
    "") ;;
    --fix) fix=1 ;;
    *) echo "usage: bash tests/format-check.sh [--fix]" >&2; exit 2 ;;
esac

cf=${CLANG_FORMAT:-}
if [ -z "$cf" ]; then
    for candidate in clang-format-14 clang-format; do
        if command -v "$candidate" >/dev/null; then cf=$candidate; break; fi
    done
fi
[ -n "$cf" ] || { echo "format-check: clang-format is not installed (bash installer/build-deps.sh --tests)" >&2; exit 1; }
version=$("$cf" --version)
# Another major version formats some constructs differently: the files follow version 14.
case "$version" in
    *"version 14."*) ;;
    *) echo "format-check: warning: $version is not clang-format 14, which the files follow" >&2 ;;
esac

# Tracked files only (what CI sees), and only those that exist (a deletion not yet committed).
files=()
while IFS= read -r -d '' f; do
    [ -f "$f" ] && files+=("$f")
done < <(git ls-files -z -- '*.cpp' '*.h')
[ ${#files[@]} -gt 0 ] || { echo "format-check: no tracked *.cpp or *.h files found" >&2; exit 1; }

# One clang-format run over all files; each formatting difference is reported as
# "FILE:LINE:COL: error: code should be clang-formatted [-Wclang-format-violations]".
rc=0
out=$("$cf" --style=file --dry-run -Werror "${files[@]}" 2>&1) || rc=$?
drifted=()
while IFS= read -r f; do
    [ -n "$f" ] && drifted+=("$f")
done < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<<"$out" | sort -u)
if [ "$rc" != 0 ] && [ ${#drifted[@]} -eq 0 ]; then
    printf '%s\n' "$out" >&2
    echo "format-check: $cf failed (exit $rc) without naming a file that drifted" >&2
    exit 1
fi

if [ ${#drifted[@]} -eq 0 ]; then
    echo "format-check: all ${#files[@]} tracked *.cpp and *.h files are formatted ($version)"
    exit 0
fi
if [ "$fix" = 1 ]; then
    "$cf" --style=file -i "${drifted[@]}"
    printf 'format-check: reformatted %d file(s):\n' "${#drifted[@]}"
    printf '  %s\n' "${drifted[@]}"
    exit 0
fi
printf 'format-check: %d of %d tracked *.cpp and *.h files are not formatted as .clang-format says:\n' \
    "${#drifted[@]}" "${#files[@]}" >&2
printf '  %s\n' "${drifted[@]}" >&2
echo "Fix them with: bash tests/format-check.sh --fix (or $cf -i FILE)" >&2
exit 1
