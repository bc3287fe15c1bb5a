#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check-reproducible.sh SRC [MESON_OPTION...]
#
# Builds the commit checked out in the git tree SRC twice, in two
# directories of different depth (the first build directory inside its
# source tree, the second outside it), with the same meson options and
# SOURCE_DATE_EPOCH, and compares ptraced, ptctl and libptraced-client
# byte for byte. Exits 0 when they are identical, 1 when not (cmp and
# the first differing section are shown). The paths that would differ are
# mapped out by the compiler flags in the top-level meson.build.
#
#   tests/release/check-reproducible.sh . -Dman=disabled
#
# A few minutes on 2 cores (two builds of the daemon and client only).
# It builds what is committed: uncommitted changes are not part of HEAD.
set -euo pipefail
src=$(cd "${1:?usage: check-reproducible.sh SRC [MESON_OPTION...]}" && pwd)
shift
if ! rev=$(git -C "$src" rev-parse HEAD 2>/dev/null); then
    echo "SKIP: $src is not a git checkout (this check builds its HEAD twice)"
    exit 77
fi
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct "$rev")}
tmp=$(mktemp -d /tmp/ptraced-repro.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# (source tree, build directory) twice.
trees=("$tmp/a/src" "$tmp/b/c/ptraced-$rev")
builds=("$tmp/a/src/build" "$tmp/b/out/x/build")
files=(daemon/ptraced client/ptctl lib/libptraced-client.so.1.0.0)

for i in 0 1; do
    mkdir -p "${trees[$i]}"
    git -C "$src" archive --format=tar "$rev" | tar -x -C "${trees[$i]}"
    echo "build $((i + 1)): ${trees[$i]} -> ${builds[$i]}"
    meson setup "${builds[$i]}" "${trees[$i]}" --prefix=/usr "$@" >"$tmp/setup$i.log" 2>&1 ||
        { cat "$tmp/setup$i.log" >&2; exit 1; }
    ninja -C "${builds[$i]}" "${files[@]}" >"$tmp/build$i.log" 2>&1 ||
        { tail -n 50 "$tmp/build$i.log" >&2; exit 1; }
done

bad=0
for f in "${files[@]}"; do
    a=${builds[0]}/$f b=${builds[1]}/$f
    if cmp -s "$a" "$b"; then
        echo "identical: $f ($(sha256sum <"$a" | cut -c1-16))"
        continue
    fi
    bad=1
    echo "DIFFERENT: $f" >&2
    cmp "$a" "$b" | head -n 1 >&2 || true
    # Which sections differ, to say where to look.
    for s in $(readelf -SW "$a" | sed -n 's/^ *\[ *[0-9]*\] \([^ ]*\) .*/\1/p'); do
        objcopy -O binary --only-section="$s" "$a" "$tmp/sa" 2>/dev/null || continue
        objcopy -O binary --only-section="$s" "$b" "$tmp/sb" 2>/dev/null || continue
        cmp -s "$tmp/sa" "$tmp/sb" || echo "  section $s differs" >&2
    done
    for root in "${trees[0]}" "${builds[0]}" "${trees[1]}" "${builds[1]}"; do
        strings -a "$a" "$b" | grep -F -- "$root" | sort -u | head -n 5 | sed "s|^|  path: |" >&2 || true
    done
done
exit $bad
