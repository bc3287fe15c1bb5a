#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ptctl decode without a TSC conversion (issue 17, item 1): raw files
# (--pt with --sideband and no --time-*) and a bundle whose manifest has
# time_mult 0. The decoder then sees every version of a process's address
# space at once; naming an address no image covers used to index the
# version list with that "all versions" marker and crash (SIGSEGV) in every
# format. Each format must decode, exit 0 and say why times are ticks.
#
# Usage: test-decode-notime.sh PTCTL PTSYNTH

set -eu

ptctl=$1
ptsynth=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! command -v python3 >/dev/null; then
        echo "SKIP: python3 is needed to rewrite the manifest"
        exit 77
fi

fail() {
        echo "FAIL: $*" >&2
        exit 1
}

"$ptsynth" --seed 1 --cpus 1 --procs 2 -o "$tmp/b.tar" --raw-dir "$tmp/raw" >/dev/null ||
        fail "ptsynth"

# The same bundle with time_mult 0 (no usable conversion).
python3 - "$tmp/b.tar" "$tmp/notime.tar" <<'PY' || fail "rewriting the manifest"
import io, json, sys, tarfile
with tarfile.open(sys.argv[1]) as tin, tarfile.open(sys.argv[2], "w", format=tarfile.USTAR_FORMAT) as tout:
    for ti in tin.getmembers():
        data = tin.extractfile(ti).read()
        if ti.name == "manifest.json":
            m = json.loads(data)
            m["tsc"]["time_mult"] = 0
            data = json.dumps(m).encode()
            ti.size = len(data)
        tout.addfile(ti, io.BytesIO(data))
PY

check() { # NAME FORMAT ARGS...
        name=$1 format=$2
        shift 2
        rc=0
        "$ptctl" decode "$@" --format="$format" >"$tmp/out" 2>"$tmp/err" || rc=$?
        [ "$rc" -eq 0 ] || { cat "$tmp/err" >&2; fail "$name --format=$format exited $rc"; }
        grep -q 'no TSC conversion' "$tmp/err" || fail "$name --format=$format: no note on the missing TSC conversion"
        if [ "$format" != folded ]; then
                [ -s "$tmp/out" ] || fail "$name --format=$format: no output"
        fi
        if [ "$format" = json ]; then
                python3 -c 'import json, sys
for line in open(sys.argv[1]): json.loads(line)' "$tmp/out" || fail "$name --format=json: invalid JSON"
        fi
}

for format in calls branches json folded insn; do
        check raw "$format" --pt "$tmp/raw/cpu0.pt" --sideband "$tmp/raw/sideband.perf"
        check bundle "$format" "$tmp/notime.tar"
done

# With the images in the bundle, symbols are still named without times.
"$ptctl" decode "$tmp/notime.tar" --format=branches -q >"$tmp/branches" || fail "bundle branches"
grep -q ' => [a-z_]*+0x[0-9a-f]*$' "$tmp/branches" || fail "bundle without times: no branch target named by symbol"
echo "ok: 5 formats, raw and time_mult 0, decode without a TSC conversion"
