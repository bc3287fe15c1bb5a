#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ptctl decode to a terminal goes through a pager (issue 18, conventions),
# run under a pty (script(1)): $PTCTL_PAGER first, then $PAGER, then less
# with LESS=FRSX unless the user has a $LESS; --no-pager, an empty value or
# "cat", output to a pipe and -o FILE page nothing.
set -euo pipefail
ptctl=$1 ptsynth=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v script >/dev/null || { echo "SKIP: script(1) (util-linux) is not installed"; exit 77; }

"$ptsynth" --cpus 1 --seed 5 -o "$tmp/b.tar" >/dev/null
on_tty() { script -qec "$1" /dev/null </dev/null >"$tmp/tty.out" 2>&1; }
decode="'$ptctl' decode --format=calls '$tmp/b.tar'"

# $PTCTL_PAGER gets the output (and the summary: stderr is the same terminal).
on_tty "PTCTL_PAGER='cat > $tmp/paged' PAGER='cat > $tmp/wrong' $decode"
[ -s "$tmp/paged" ] || fail "PTCTL_PAGER did not get the output"
[ ! -e "$tmp/wrong" ] || fail "PAGER was used although PTCTL_PAGER is set"
"$ptctl" decode --format=calls -q "$tmp/b.tar" >"$tmp/plain"
head -c 2000 "$tmp/plain" > "$tmp/plain.head"
head -c 2000 "$tmp/paged" | tr -d '\r' > "$tmp/paged.head"
cmp -s "$tmp/plain.head" "$tmp/paged.head" || fail "the pager's input differs from the plain output"

# $PAGER when PTCTL_PAGER is unset.
on_tty "unset PTCTL_PAGER; PAGER='cat > $tmp/paged2' $decode"
[ -s "$tmp/paged2" ] || fail "PAGER did not get the output"

# The default: less, with LESS=FRSX unless set. A fake less records it.
mkdir "$tmp/bin"
printf '#!/bin/sh\necho "LESS=$LESS args=$*" > %s\ncat > /dev/null\n' "$tmp/less.log" > "$tmp/bin/less"
chmod +x "$tmp/bin/less"
on_tty "unset PTCTL_PAGER PAGER LESS; PATH='$tmp/bin':\$PATH $decode"
grep -qx "LESS=FRSX args=" "$tmp/less.log" || fail "default pager: $(cat "$tmp/less.log" 2>/dev/null)"
on_tty "unset PTCTL_PAGER PAGER; LESS=-R PATH='$tmp/bin':\$PATH $decode"
grep -qx "LESS=-R args=" "$tmp/less.log" || fail "the user's LESS was overridden"

# No pager: --no-pager, "cat", a pipe, -o.
rm -f "$tmp/paged"
on_tty "PTCTL_PAGER='cat > $tmp/paged' $decode --no-pager"
[ ! -e "$tmp/paged" ] || fail "--no-pager still paged"
grep -q "CPU" "$tmp/tty.out" || fail "--no-pager: nothing on the terminal"
on_tty "PTCTL_PAGER=cat $decode"
[ ! -e "$tmp/paged" ] || fail "PTCTL_PAGER=cat paged"
PTCTL_PAGER="cat > $tmp/paged" "$ptctl" decode --format=calls "$tmp/b.tar" 2>/dev/null | cat >/dev/null
[ ! -e "$tmp/paged" ] || fail "output to a pipe was paged"
on_tty "PTCTL_PAGER='cat > $tmp/paged' $decode -o '$tmp/out.txt'"
[ ! -e "$tmp/paged" ] || fail "-o FILE was paged"
echo "ok: pager chosen and skipped as documented"
