#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# One exit-code table for every verb (ptctl(1), EXIT STATUS) and the path
# in every file error (issue 18): a missing file exits 4 from info, decode
# and export alike, naming it; unreadable 5; usage 2; no daemon 3. Options
# that do not apply are refused (2) with a message: raw-mode timing options
# with a bundle, info's -D and --verify for a perf recording, ptraced's
# --sysfs-root with --source=sim. info prints a string detail as itself
# (no JSON "\/" escaped again), --version works after a verb.
set -euo pipefail
ptctl=$1 ptraced=$2 ptsynth=$3 edit=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$(readlink -f "$0")")/expect.sh"

for verb in info decode "export --perf"; do
    args=("$tmp/missing.tar")
    [ "$verb" = "export --perf" ] && args+=("$tmp/out")
    run 4 "$ptctl" $verb "${args[@]}"
    has "$tmp/missing.tar"
done
run 4 "$ptctl" decode --pt "$tmp/missing.pt"
has "$tmp/missing.pt"

"$ptsynth" --cpus 1 --seed 7 -o "$tmp/b.tar" >/dev/null
if [ "$(id -u)" -ne 0 ]; then
    chmod 000 "$tmp/b.tar"
    for verb in info decode; do run 5 "$ptctl" $verb "$tmp/b.tar"; done
    chmod 644 "$tmp/b.tar"
fi

run 2 "$ptctl" decode --frobnicate "$tmp/b.tar"
run 3 "$ptctl" --socket "$tmp/no.sock" status
has "$tmp/no.sock"
run 3 env PTRACED_SOCKET="$tmp/env.sock" "$ptctl" status
has "$tmp/env.sock"

for opt in "--mtc-freq 3" "--nom-freq 10" "--cpuid-15 2,100" "--sample-type 0x10"; do
    run 2 "$ptctl" decode $opt "$tmp/b.tar"
    has "${opt%% *} is a raw-mode option"
done

# A perf recording: info's bundle options are refused, not ignored.
printf 'PERFILE2' > "$tmp/p.data"
head -c 256 /dev/zero >> "$tmp/p.data"
for opt in "-D $tmp" --verify --no-verify; do
    run 2 "$ptctl" info $opt "$tmp/p.data"
    has "applies to bundles"
done

run 1 "$ptraced" --source=sim --sysfs-root "$tmp" --check-config
has "--sysfs-root applies to Source=kernel"

"$edit" "$tmp/b.tar" "$tmp/d.tar" 'm["trigger"]["details"] = {"exe": "/usr/bin/bash", "n": 3}'
run 0 "$ptctl" info --no-verify "$tmp/d.tar"
has 'exe="/usr/bin/bash"'
hasnt '\x5c'

run 0 "$ptctl" status --version
has "ptctl "
echo "ok: exit codes, file errors, refused options, info escaping"
