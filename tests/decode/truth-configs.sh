# SPDX-License-Identifier: MIT
#
# The ptsynth configurations of the ground-truth matrix
# (test-decode-truth.sh), sourced by the tests that decode the same shapes
# (test-decode-equal-paths.sh). name | ptsynth options
truth_configs=(
        "kernel|--kernel --cpus 2 --procs 3"
        "kernel-only|--kernel-only --cpus 2"
        "kernel-ovf|--kernel --ovf-every 20000"
        "kernel-events|--kernel --ptw --fup-on-ptw --pwr-evt --tsx --cbr-changes"
        "kernel-noretcomp|--kernel --noretcomp --psb-period 0"
        "kernel-tsc|--kernel --timing tsc"
        "kernel-cyc|--kernel --timing tsc,mtc,cyc"
        "kernel-wide|--kernel --cpus 4 --procs 6 --ring-size 262144"
        "kernel-small|--kernel --ring-size 16384 --psb-period 0"
        "user|--cpus 2 --procs 2"
        "user-noretcomp|--noretcomp"
        "user-cyc|--timing tsc,mtc,cyc --cpus 2 --procs 3"
        "user-ovf|--ovf-every 20000 --timing tsc,mtc,cyc"
        "user-tsx|--tsx --cpus 3"
        "user-wide|--cpus 4 --procs 8 --ring-size 262144"
        "kernel-poke|--kernel --text-poke --cpus 2"
        "kernel-only-poke|--kernel-only --text-poke --timing tsc,mtc,cyc"
        "user-hw-psb|--hw-psb --ovf-every 20000 --timing tsc,mtc,cyc --cpus 2"
        "kernel-hw-psb|--kernel --hw-psb --ovf-every 20000 --psb-period 0"
)
