#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The project's entry point on a fresh Debian 12 machine (as root). Every
# verb installs what it needs from Debian's archive, sets up its build
# directory and builds; running it again does only what is left to do.
#
#   ./dev.sh demo     start ptraced, take a snapshot, decode it
#   ./dev.sh test     the whole test suite (unit, integration, decode, system)
#   ./dev.sh asan     unit + integration suites under ASan/UBSan
#   ./dev.sh fuzz     every libFuzzer target for a bounded time (clang)
#   ./dev.sh release  what a release needs: two builds of HEAD give the same bytes
#   ./dev.sh bench    benchmarks, writes BENCHMARKS.md (--quick: a smoke test)
#   ./dev.sh perf-referee  stock perf vs ptctl vs the truth, 20 seeds per
#                     context-switch configuration (--seeds N), with counts
#   ./dev.sh deps     only install the Debian packages
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")"
top=$PWD

# Debian packages, with what each is for.
debs=(
    meson ninja-build pkg-config gcc clang       # build
    libsystemd-dev                               # sd-event, sd-bus, journal, sd_notify
    libelf-dev libdw-dev                         # ELF, build-ids, symbols, source lines
    libipt-dev                                   # Intel PT decode and encode
    libzydis-dev                                 # x86 decoding and disassembly
    libbpf-dev bpftool                           # BPF triggers
    dbus-daemon                                  # a private bus for the systemd unit trigger tests
    libzstd-dev zstd libarchive-dev              # bundles
    libjson-c-dev                                # manifest, control protocol
    libprotobuf-c-dev protobuf-c-compiler        # ptctl decode --format=perfetto
    protobuf-compiler                            # protoc --decode_raw checks it in tests
    libssl-dev                                   # SHA-256 of bundle members
    scdoc                                        # man pages
    libclang-rt-14-dev                           # libFuzzer and sanitizer runtimes for clang
    linux-perf                                   # stock perf, the referee in tests
    systemd                                      # systemd-analyze, systemd-socket-activate
    binutils util-linux procps python3 file     # test tooling (nm, setpriv, ps)
    bc                                           # the demo's traced workload
    libc6-dbg                                    # names of libc's local functions (ifunc variants) in decodes
)

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

install_deps() {
    local missing=()
    for p in "${debs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "missing Debian packages: ${missing[*]}" >&2
        echo "run as root, or: apt-get install ${missing[*]}" >&2
        exit 1
    fi
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# setup_build DIR [meson options...]: configure once, reconfigure when the
# options changed, then build.
setup_build() {
    local dir=$1; shift
    if [ ! -f "$dir/build.ninja" ]; then
        say "meson setup $dir $*"
        meson setup "$dir" "$@" >/dev/null
    fi
    say "building $dir"
    ninja -C "$dir" >/dev/null || ninja -C "$dir"
}

jobs() { nproc 2>/dev/null || echo 2; }

cmd_test() {
    install_deps
    setup_build build
    say "running the test suites"
    # Suite 'open' holds acceptance tests of open issues' unfinished items
    # (tests/integration/meson.build says which and why); run them with
    # `meson test -C build --suite open`.
    meson test -C build --print-errorlogs --num-processes "$(jobs)" --no-suite release --no-suite open "$@"
}

# Suite "release" (tests/release): slow checks of the build itself, with a
# log of their own (build/meson-logs/release.json) next to the test run's.
cmd_release() {
    install_deps
    setup_build build
    say "running the release checks"
    meson test -C build --print-errorlogs --suite release --logbase release "$@"
}

cmd_asan() {
    install_deps
    setup_build build-asan -Db_sanitize=address,undefined -Db_lundef=false
    say "running unit and integration suites under ASan+UBSan"
    local rc=0
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        meson test -C build-asan --print-errorlogs --num-processes "$(jobs)" --suite unit --suite integration "$@" ||
        rc=$?
    # The emulated PMU's soak under the sanitizers (test-sim-soak): its figures.
    grep -h '^soak: ' build-asan/meson-logs/testlog.txt 2>/dev/null || true
    return $rc
}

cmd_fuzz() {
    install_deps
    CC=clang setup_build build-fuzz -Dfuzzing=true -Db_lundef=false
    say "running the fuzz targets (${PTRACED_FUZZ_SECONDS:-20}s each)"
    PTRACED_FUZZ_SECONDS=${PTRACED_FUZZ_SECONDS:-20} \
        meson test -C build-fuzz --print-errorlogs --num-processes "$(jobs)" --suite fuzz "$@"
}

# Every benchmark on this machine (tests/bench/run-all; --quick for a smoke
# test, --help for the rest), from a release build of its own.
cmd_bench() {
    install_deps
    if [ -f build-bench/build.ninja ] &&
       ! grep -q '"name": "buildtype", "value": "release"' build-bench/meson-info/intro-buildoptions.json 2>/dev/null; then
        meson configure build-bench --buildtype=release >/dev/null
    fi
    setup_build build-bench --buildtype=release
    exec "$top/tests/bench/run-all" "$top/build-bench" "$@"
}

# test-perf-referee's switch matrix with more seeds than CI runs, reporting
# per configuration: seeds, ptctl == truth, perf errors, branch mismatches.
cmd_perf_referee() {
    local seeds=20
    install_deps
    if [ "${1:-}" = --seeds ] && [ $# -ge 2 ]; then seeds=$2; shift 2; fi
    command -v perf >/dev/null || { echo "perf-referee: no perf (apt-get install linux-perf)" >&2; exit 1; }
    setup_build build
    exec "$top/build/tests/decode/test-perf-referee" "$top/build/client/ptctl" \
        "$top/build/tests/ptsynth/ptsynth" --seeds "$seeds" --report "$@"
}

cmd_demo() {
    install_deps
    setup_build build
    exec "$top/tests/demo.sh" "$top/build"
}

verb=${1:-}
[ $# -gt 0 ] && shift
case "$verb" in
    demo) cmd_demo "$@" ;;
    test) cmd_test "$@" ;;
    asan) cmd_asan "$@" ;;
    fuzz) cmd_fuzz "$@" ;;
    release) cmd_release "$@" ;;
    bench) cmd_bench "$@" ;;
    perf-referee) cmd_perf_referee "$@" ;;
    deps) install_deps ;;
    *) sed -n '4,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
