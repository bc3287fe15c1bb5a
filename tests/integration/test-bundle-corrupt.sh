#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A bundle member whose bytes do not match the manifest's SHA-256 (issue
# 17): info says "corrupt" and exits 1, decode reports an error for it
# (and --strict fails), export --perf fails and leaves nothing behind.
# The intact bundle next to it passes all three.
set -euo pipefail
ptctl=$1 ptsynth=$2 edit=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$(readlink -f "$0")")/expect.sh"

"$ptsynth" --cpus 2 --seed 3 -o "$tmp/good.tar" >/dev/null
"$edit" "$tmp/good.tar" "$tmp/bad.tar" 'member("cpu0.pt")["sha256"] = "00" * 32'

run 0 "$ptctl" info "$tmp/good.tar"
has "State: present"
has "Verified: all"
run 0 "$ptctl" decode --strict --format=calls -o "$tmp/good.txt" "$tmp/good.tar"
run 0 "$ptctl" export --perf "$tmp/good.tar" "$tmp/good.perf"

run 1 "$ptctl" info "$tmp/bad.tar"
echo "$out" | head -5
has "State: corrupt (cpu0.pt: SHA-256 mismatch"
hasnt "Verified: all"
# The manifest alone, on request: it cannot know.
run 0 "$ptctl" info --no-verify "$tmp/bad.tar"
run 1 "$ptctl" --json info "$tmp/bad.tar"
has '"state": "corrupt"'

run 1 "$ptctl" decode --strict --format=calls -o "$tmp/bad.txt" "$tmp/bad.tar"
has "error: cpu trace unusable (cpu0.pt): cpu0.pt: SHA-256 mismatch"
has "decode error"
hasnt "note: cpu trace unusable"
# Without --strict the other CPU still decodes; the error is still said.
run 0 "$ptctl" decode -q --format=calls -o "$tmp/bad.txt" "$tmp/bad.tar"
has "error: cpu trace unusable (cpu0.pt)"
[ -s "$tmp/bad.txt" ] || fail "CPU 1 was not decoded"

run 1 "$ptctl" export --perf "$tmp/bad.tar" "$tmp/bad.perf"
has "cpu0.pt: SHA-256 mismatch"
[ ! -e "$tmp/bad.perf" ] || fail "export left $tmp/bad.perf behind"
echo "corrupt member: info, decode --strict and export --perf all fail; the intact bundle passes"
