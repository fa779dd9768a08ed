#!/usr/bin/env bash
# Runs every test suite under a sanitizer and fails on any report.
#   scripts/sanitize.sh thread    ThreadSanitizer (every lock is a pthread mutex TSan sees)
#   scripts/sanitize.sh address   AddressSanitizer with leak detection (scripts/lsan.supp)
# Builds in .build-<kind>; prints the test summary, and the whole log when something failed.
#
# Two guards keep a machine problem from eating CI's time:
# - a preflight: the test binary must list its tests within 5 minutes. A sanitizer runtime that
#   cannot start on this kernel or sandbox (TSan needs its fixed memory layout: high ASLR entropy
#   with `personality` forbidden makes it re-exec forever) is reported and the step is skipped,
#   loudly, instead of hanging.
# - a watchdog: the run gets SANITIZE_TIMEOUT seconds (1200 by default; about 40 s here). When it
#   fires, the tests that started and never ended are printed. Any sanitizer report or failed test
#   still fails the step; a run that only stalled is reported as inconclusive, with those names.
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:?usage: scripts/sanitize.sh thread|address}"
limit="${SANITIZE_TIMEOUT:-1200}"
bash scripts/install-deps.sh libcurl4-openssl-dev zlib1g-dev libbrotli-dev libzstd-dev openssl libxml2 nginx curl python3-h2
scratch=".build-$kind"
started=$(date +%s)
swift build --build-tests --sanitize="$kind" --scratch-path "$scratch" 2>&1 | grep -E "error|warning: |Compiling|Build" | tail -3
built=$(date +%s)
case "$kind" in
    thread)
        export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1"
        # TSan's memory layout needs at most 28 bits of mmap randomness; lower it when allowed.
        bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)
        if [ "$bits" -gt 28 ] && [ "$(id -u)" -eq 0 ]; then
            sysctl -qw vm.mmap_rnd_bits=28 2>/dev/null || echo "sanitize thread: vm.mmap_rnd_bits is $bits and cannot be lowered"
        fi
        ;;
    address)
        export ASAN_OPTIONS="detect_leaks=1"
        export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp print_suppressions=0"
        ;;
    *) echo "unknown sanitizer: $kind" >&2; exit 2 ;;
esac
# At most 16 tests at once. Unbounded, all 600 start together, each with its loop threads and
# servers; under a sanitizer on 2 cores a test then waited over 60 s for the cooperative pool
# (three tests' 60 s limits fired in one CI run), and the run took 240 s. With 16 it took 150 s.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-16}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

set +e
timeout --kill-after=10 300 swift test --skip-build --sanitize="$kind" --scratch-path "$scratch" --list-tests >"$log" 2>&1
status=$?
set -e
if [ "$status" -ne 0 ]; then
    echo "sanitize $kind: SKIPPED, the sanitized test binary cannot start on this machine (exit $status):"
    head -c 4000 "$log"
    echo "(kernel $(uname -r), vm.mmap_rnd_bits $(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo '?'))"
    exit 0
fi

set +e
timeout --kill-after=10 "$limit" stdbuf -oL -eL swift test --skip-build --sanitize="$kind" --scratch-path "$scratch" >"$log" 2>&1
status=$?
set -e
reports=$(grep -cE "WARNING: ThreadSanitizer|ERROR: (AddressSanitizer|LeakSanitizer)" "$log" || true)
failures=$(grep -cE "^✘ Test .* (failed|recorded an issue)" "$log" || true)
summary="build $((built - started)) s, tests $(($(date +%s) - built)) s"
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    # swift test does not take its test process down with it.
    pkill -9 -f "$scratch/.*/CourierPackageTests.xctest" || true
    echo "sanitize $kind: the run was stopped after $limit s. Tests that started and never ended:"
    python3 scripts/unfinished-tests.py "$log" || true
    if [ "$reports" -ne 0 ] || [ "$failures" -ne 0 ]; then
        cat "$log"
        echo "sanitize $kind: stopped, $reports sanitizer reports, $failures failed tests; $summary"
        exit 1
    fi
    grep -E "^(✔|✘) Test" "$log" | tail -5 || true
    echo "sanitize $kind: INCONCLUSIVE (stalled, 0 sanitizer reports and 0 failures in what ran); $summary"
    exit 0
fi
if [ "$status" -ne 0 ] || [ "$reports" -ne 0 ]; then
    cat "$log"
fi
grep -E "^(✔|✘) Test run" "$log" || true
echo "sanitize $kind: exit $status, $reports sanitizer reports; $summary"
[ "$status" -eq 0 ] && [ "$reports" -eq 0 ]
