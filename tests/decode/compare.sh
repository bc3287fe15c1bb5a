# SPDX-License-Identifier: MIT
#
# Sourced by the decode suite's comparison scripts (test-decode-jobs,
# -truth, -tsc-only, -equal-paths) after `set -u`: a scratch directory
# $tmp removed at exit, the count of cases compared, and fail(), which
# reports a difference and makes the script exit 1 at its end (exit
# $failed) after every case was tried.

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
cases=0

fail() {
        echo "FAIL: $*" >&2
        failed=1
}
