#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Decoding holds the trace pages it works on, not the whole trace (issue
# 20: "peak memory bounded by the segment size times the jobs, not by the
# trace"). The trace is mapped from a file (a raw --pt file, or the
# unnamed temporary a bundle's trace member is written to) and the index
# and the workers give its pages back as they finish with them
# (decode_trace_release()). This samples the resident size of the trace's
# mapping in /proc/PID/smaps while ptctl decodes 32 MiB of one CPU's trace
# with --jobs 2, and fails when it ever reaches half of the trace
# (before: the index's scan left all of it resident; a bundle's trace sat
# in the heap), or when the trace is not mapped from a file at all.
#
# Usage: test-decode-memory.sh PTCTL PTSYNTH

set -eu

ptctl=$1
ptsynth=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for p in python3 zstd; do
        if ! command -v $p >/dev/null; then
                echo "SKIP: $p is needed (python3 samples /proc/PID/smaps, zstd unpacks the kernel image)"
                exit 77
        fi
done

fail() {
        echo "FAIL: $*" >&2
        exit 1
}

mib=32
"$ptsynth" --seed 11 --cpus 1 --ring-size $((mib * 1024 * 1024)) --kernel-only -o "$tmp/b.tar" \
        --raw-dir "$tmp/raw" >/dev/null || fail "ptsynth"
tar -xf "$tmp/b.tar" -C "$tmp" kcore.elf.zst || fail "no kcore.elf.zst in the bundle"

# peak.py SIZE PATTERN CMD...: run CMD; print the largest Rss (kB) any
# mapping of SIZE bytes whose path contains PATTERN had while it ran, or
# "none" when no such mapping was seen.
cat >"$tmp/peak.py" <<'PY'
import subprocess, sys, time
size_kb, pattern, cmd = int(sys.argv[1]) // 1024, sys.argv[2], sys.argv[3:]
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
peak = None
while p.poll() is None:
    try:
        with open('/proc/%d/smaps' % p.pid) as f:
            lines = f.read().splitlines()
    except OSError:
        break
    cur = False
    for l in lines:
        if '-' in l.split(' ', 1)[0] and not l.startswith(('Size', 'Rss')):
            cur = pattern in l
        elif cur and l.startswith('Size:'):
            cur = int(l.split()[1]) == size_kb
        elif cur and l.startswith('Rss:'):
            peak = max(peak or 0, int(l.split()[1]))
    time.sleep(0.005)
err = p.communicate()[1]
if p.returncode != 0:
    sys.stderr.write(err.decode(errors='replace'))
    sys.exit('ptctl exited with %d' % p.returncode)
print('none' if peak is None else peak)
PY

check() {
        what=$1
        pattern=$2
        shift 2
        peak=$(python3 "$tmp/peak.py" $((mib * 1024 * 1024)) "$pattern" "$ptctl" decode -q --format=summary \
                --jobs 2 "$@") || fail "$what: ptctl decode failed"
        [ "$peak" != none ] || fail "$what: the trace is not mapped from a file (it sits in the heap)"
        echo "$what: the trace's mapping peaked at $peak kB resident of $((mib * 1024)) kB"
        [ "$peak" -lt $((mib * 1024 / 2)) ] ||
                fail "$what: $peak kB of the $((mib * 1024)) kB trace resident at once: memory grows with the trace"
}

# kcore.elf for raw mode: the bundle's kernel image.
zstd -qd "$tmp/kcore.elf.zst" -o "$tmp/kcore.elf" || fail "unpacking kcore.elf.zst"

check "raw --pt" "$tmp/raw/cpu0.pt" --pt="$tmp/raw/cpu0.pt" --pt-cpu=0 --image="$tmp/kcore.elf"
check "bundle" "(deleted)" "$tmp/b.tar"
echo "PASS"
