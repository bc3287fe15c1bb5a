#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The shell completions (issue 18, conventions): loaded into bash, ptctl's
# completion offers every verb of 'ptctl --help', completes a verb's prefix
# and a verb's options; zsh loads its completion when zsh is there.
set -euo pipefail
build=$1 src=$2
export PATH=$build/client:$PATH

verbs=$(ptctl --help | sed -n '/^Verbs:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' | sort)
[ "$(echo "$verbs" | wc -l)" -ge 6 ] || { echo "FAIL: ptctl --help lists too few verbs: $verbs"; exit 1; }

complete_words() { # the words of a command line, the last being completed
    bash --norc --noprofile -c '
        . "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"
        _ptctl
        printf "%s\n" "${COMPREPLY[@]}"' _ "$src/shell-completion/ptctl.bash" "$@"
}

got=$(complete_words ptctl "" | sort)
[ "$got" = "$verbs" ] || { echo "FAIL: bash completes the verbs as"; echo "$got"; echo "not"; echo "$verbs"; exit 1; }
[ "$(complete_words ptctl --json snap)" = snapshot ] || { echo "FAIL: 'ptctl --json snap' does not complete to snapshot"; exit 1; }
# (Into a variable first: under pipefail, grep -q leaving early can kill
# the writer with SIGPIPE and fail the pipeline although it matched.)
got=$(complete_words ptctl decode --for)
grep -qx -- --format <<<"$got" || { echo "FAIL: 'ptctl decode --for' does not offer --format"; exit 1; }
got=$(complete_words ptctl decode --dec)
grep -qx -- --decoder <<<"$got" || { echo "FAIL: 'ptctl decode --dec' does not offer --decoder"; exit 1; }
[ "$(complete_words ptctl decode --decoder "" | sort | tr '\n' ' ')" = "fast libipt " ] ||
    { echo "FAIL: --decoder's values do not complete"; exit 1; }
got=$(complete_words ptctl status --j)
grep -qx -- --json <<<"$got" || { echo "FAIL: global --json not offered after a verb"; exit 1; }
[ "$(complete_words ptctl watchdog re | sort | tr '\n' ' ')" = "register remove " ] ||
    { echo "FAIL: watchdog actions"; exit 1; }
echo "bash: $(echo "$verbs" | wc -l) verbs and their options complete"

if command -v zsh >/dev/null; then
    zsh -f -c "autoload -Uz compinit && compinit -u && fpath=($src/shell-completion \$fpath) && autoload -Uz _ptctl && whence -w _ptctl" |
        grep -q function || { echo "FAIL: zsh cannot load _ptctl"; exit 1; }
    zsh -n "$src/shell-completion/_ptctl" || { echo "FAIL: _ptctl has a syntax error"; exit 1; }
    echo "zsh: _ptctl loads"
else
    echo "zsh is not installed here: its completion was not loaded (bash was checked)"
fi
