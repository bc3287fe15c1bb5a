#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test-install.sh SOURCE_ROOT BUILD_ROOT
#
# The installed tree works on its own: a fresh build directory installs
# ptraced, ptctl and libptraced-client under a temporary prefix and is then
# removed; the installed ptraced --source=sim records (its trace synthesizer
# needs nothing from the build directory: the kernel-like image is inside
# the program, daemon/synth/README.md), the installed ptctl takes a
# snapshot, and the bundle decodes. Root: the simulated source follows the
# real CPUs' side-band. Builds only what is installed (about 3 minutes on
# 2 cores); BUILD_ROOT is the build under test, asked whether it has the
# emulated PMU and for its meson options' compiler.
set -euo pipefail
src=$1 build=$2

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (system-wide side-band events on real CPUs)"; exit 77; }
if "$build/daemon/ptraced" --version | grep -q -- '-emulated-pmu'; then
    echo "SKIP: this ptraced was built without the emulated PMU (-Demulated-pmu=false)"
    exit 77
fi

tmp=$(mktemp -d /tmp/ptraced-install.XXXXXX)
daemon=
cleanup() {
    [ -n "$daemon" ] && kill "$daemon" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/ptraced.log" ] && sed 's/^/  ptraced: /' "$tmp/ptraced.log" >&2; exit 1; }

prefix=$tmp/prefix b=$tmp/build
echo "== meson setup, build and install to $prefix"
meson setup "$b" "$src" --prefix="$prefix" -Dman=disabled -Demulated-pmu=true >"$tmp/setup.log" 2>&1 ||
    { cat "$tmp/setup.log" >&2; fail "meson setup failed"; }
# What is installed, not the tests and benchmarks of the tree.
ninja -C "$b" daemon/ptraced client/ptctl lib/libptraced-client.so.1.0.0 >"$tmp/build.log" 2>&1 ||
    { tail -n 40 "$tmp/build.log" >&2; fail "build failed"; }
meson install -C "$b" --no-rebuild >"$tmp/install.log" 2>&1 ||
    { tail -n 40 "$tmp/install.log" >&2; fail "meson install failed"; }
rm -rf "$b"

ptraced=$prefix/sbin/ptraced ptctl=$prefix/bin/ptctl
[ -x "$ptraced" ] && [ -x "$ptctl" ] || fail "ptraced or ptctl not installed under $prefix"
[ -n "$(find "$prefix" -name libptraced-client.so.1)" ] || fail "libptraced-client.so.1 not installed under $prefix"
# Issue 18: the journal catalog, both shells' completions and the units,
# all under the prefix (directories from systemd.pc and bash-completion.pc
# with our prefix, or their fallbacks).
for f in ptraced.catalog ptraced.service _ptctl; do
    [ -n "$(find "$prefix" -name "$f")" ] || fail "$f not installed under $prefix"
done
[ -n "$(find "$prefix" -path '*bash-completion*' -name ptctl)" ] || fail "the bash completion is not installed under $prefix"

echo "== $ptraced --source=sim"
cat >"$tmp/ptraced.conf" <<CONF
[Trace]
BufferSize=256K
[Sim]
CPUs=4
[Storage]
Directory=$tmp/bundles
[Control]
Socket=$tmp/io.ptraced
CONF
"$ptraced" --source=sim --config "$tmp/ptraced.conf" >"$tmp/ptraced.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do grep -q "^Started" "$tmp/ptraced.log" && break; sleep 0.1; done
grep -q "^Started: recording 4 CPUs.*simulated" "$tmp/ptraced.log" || fail "the installed ptraced did not start"

echo "== $ptctl snapshot"
sleep 1
bundle=$("$ptctl" --socket "$tmp/io.ptraced" snapshot --reason install-test) || fail "ptctl snapshot failed"
[[ "$bundle" == "$tmp/bundles/"*.tar ]] && [ -f "$bundle" ] || fail "ptctl snapshot printed '$bundle'"
kill -TERM "$daemon"
wait "$daemon" || fail "ptraced exited with $?"
daemon=

echo "== $ptctl decode"
"$ptctl" info "$bundle" >"$tmp/info" 2>&1 || { cat "$tmp/info" >&2; fail "ptctl info failed"; }
"$ptctl" decode --format=summary "$bundle" >"$tmp/summary" 2>&1 ||
    { cat "$tmp/summary" >&2; fail "ptctl decode failed"; }
sed 's/^/  /' "$tmp/summary"
total=$(grep '^total:' "$tmp/summary") || fail "no total in the decode summary"
branches=$(echo "$total" | sed -n 's/.* \([0-9][0-9]*\) branches.*/\1/p')
[ -n "$branches" ] && [ "$branches" -gt 0 ] || fail "nothing decoded: $total"
echo "installed tree: snapshot $bundle decodes ($branches branches)"
