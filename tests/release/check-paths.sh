#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check-paths.sh SOURCE_ROOT BUILD_ROOT SANITIZE FILE...
#
# No path of the source or build tree in the programs we install: such a
# path breaks an installed copy once the tree is gone (the trace
# synthesizer's kernel image was once found that way) and makes two builds
# of one commit differ (tests/release/check-reproducible.sh). The compiler
# flags that keep them out are in the top-level meson.build.
set -euo pipefail
src=$1 build=$2 sanitize=$3
shift 3

# A sanitizer build keeps the file names of its source locations (UBSan's
# handlers print them) as the compiler was given them, which the prefix
# maps do not reach; such a build is never installed.
if [ "$sanitize" != none ]; then
    echo "SKIP: a -Db_sanitize=$sanitize build names its sources for the sanitizer's reports"
    exit 77
fi
command -v strings >/dev/null || { echo "SKIP: no strings (binutils)"; exit 77; }
bad=0
for f in "$@"; do
    [ -f "$f" ] || { echo "FAIL: $f is not built" >&2; exit 1; }
    for root in "$src" "$build"; do
        if hits=$(strings -a "$f" | grep -F -- "$root"); then
            echo "FAIL: $(basename "$f") contains $root:" >&2
            echo "$hits" | sort -u | awk 'NR <= 20 { print "  " $0 }' >&2
            bad=1
        fi
    done
done
[ "$bad" -eq 0 ] || exit 1
echo "no source or build path in: $*"
