# SPDX-License-Identifier: MIT
#
# Sourced by the integration tests that check ptctl's exit codes and
# output: run CODE CMD... leaves the output in $out; has/hasnt look in it.
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { # run CODE CMD...: exit code must be CODE; output in $out
    local code=$1 rc=0; shift
    out=$("$@" 2>&1) || rc=$?
    [ "$rc" -eq "$code" ] || fail "'$*' exited $rc, expected $code: $out"
}
has() { grep -qF -- "$1" <<<"$out" || fail "expected '$1' in: $out"; }
hasnt() { ! grep -qF -- "$1" <<<"$out" || fail "did not expect '$1' in: $out"; }
