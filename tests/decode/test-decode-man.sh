#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Every option `ptctl decode --help` lists, every format and every field is
# documented in ptctl(1).
#
# Usage: test-decode-man.sh PTCTL MAN_PAGE

set -eu

ptctl=$1
page=$2
missing=0

for opt in $("$ptctl" decode --help | grep -o -- '--[a-z0-9-]*' | sort -u); do
        if ! grep -q -e "\*$opt\*" -e "\*$opt=" -- "$page"; then
                echo "ptctl(1) does not document decode's $opt" >&2
                missing=1
        fi
done
for word in calls branches insn perfetto chrome-json folded json summary \
            time cpu pid tid comm from to kind sym dso srcline ipc \
            call icall ret jcc jmp ijmp syscall sysret int fault iret tr_start tr_end ovf \
            ptw cbr mwait pwre pwrx exstop tsx_begin tsx_commit tsx_abort psb stop \
            exec_mode paging vmcs mnt; do
        if ! grep -q -- "\*$word\*" "$page"; then
                echo "ptctl(1) does not document decode's $word" >&2
                missing=1
        fi
done
[ $missing -eq 0 ] && echo OK
