#!/usr/bin/env bash
# Runs every test suite under a sanitizer and fails on any report.
#   scripts/sanitize.sh thread    ThreadSanitizer (every lock is a pthread mutex TSan sees)
#   scripts/sanitize.sh address   AddressSanitizer with leak detection (scripts/lsan.supp)
# Builds in .build-<kind>; prints the test summary, and the whole log when something failed.
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:?usage: scripts/sanitize.sh thread|address}"
bash scripts/install-deps.sh libcurl4-openssl-dev zlib1g-dev openssl libxml2 nginx
scratch=".build-$kind"
started=$(date +%s)
swift build --build-tests --sanitize="$kind" --scratch-path "$scratch" 2>&1 | grep -E "error|warning: |Compiling|Build" | tail -3
built=$(date +%s)
case "$kind" in
    thread) export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1" ;;
    address)
        export ASAN_OPTIONS="detect_leaks=1"
        export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp print_suppressions=0"
        ;;
    *) echo "unknown sanitizer: $kind" >&2; exit 2 ;;
esac
log=$(mktemp)
set +e
swift test --skip-build --sanitize="$kind" --scratch-path "$scratch" >"$log" 2>&1
status=$?
set -e
reports=$(grep -cE "WARNING: ThreadSanitizer|ERROR: (AddressSanitizer|LeakSanitizer)" "$log" || true)
if [ "$status" -ne 0 ] || [ "$reports" -ne 0 ]; then
    cat "$log"
fi
grep -E "^(✔|✘) Test run" "$log" || true
echo "sanitize $kind: exit $status, $reports sanitizer reports; build $((built - started)) s, tests $(($(date +%s) - built)) s"
rm -f "$log"
[ "$status" -eq 0 ] && [ "$reports" -eq 0 ]
