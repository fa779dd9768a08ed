#!/usr/bin/env bash
# The README's test command: installs what is missing, builds with warnings as errors, runs
# every test suite (Swift Testing), then compiles the README's examples as pasted. A test run
# that stalls is stopped after TEST_TIMEOUT seconds (900 by default; about 15 s here), naming
# the tests that never ended. The `PostgreSQL` trait is on, so that CourierPostgresCache and its
# tests (which start their own PostgreSQL cluster) build and run here.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase prints its duration, so that a slow run says where its time went.
phase_started=$(date +%s)
phase() { echo "test.sh: $1 took $(($(date +%s) - phase_started)) s"; phase_started=$(date +%s); }
bash scripts/install-deps.sh libcurl4-openssl-dev zlib1g-dev libbrotli-dev libzstd-dev openssl libxml2 nginx postgresql curl python3-h2
export COURIER_STRICT=1
phase "installing what is missing"
swift build --build-tests --traits PostgreSQL
phase "the build"
# At most 16 tests at once, as under the sanitizers (scripts/sanitize.sh): unbounded, all 700
# start together, and a task one of them starts (a streamed body's producer) waited about 60 s
# for the cooperative pool's two threads in one run, long enough for nginx to drop the body.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-16}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Written to a file (line-buffered, so a stopped run's log is whole) and followed, not piped: a
# server a test left behind cannot hold a pipe open.
timeout --kill-after=10 "${TEST_TIMEOUT:-900}" stdbuf -oL -eL swift test --skip-build >"$log" 2>&1 &
runner=$!
tail -n +1 -f --pid="$runner" "$log"
set +e
wait "$runner"
status=$?
set -e
# A PostgreSQL cluster outlives a test process that crashed or was stopped before removing it
# (pg_ctl starts the server in the background). Clusters are named courier-pg-<pid>-<id> after
# their test process: stop those whose process is gone, and remove their folders.
for data in "${TMPDIR:-/tmp}"/courier-pg-*-*/data; do
    [ -d "$data" ] || continue
    owner=$(basename "$(dirname "$data")" | cut -d- -f3)
    kill -0 "$owner" 2>/dev/null && continue
    pkill -9 -f -- "-D $data" || true
    rm -rf "$(dirname "$data")"
done
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    pkill -9 -f "/.build/.*/CourierPackageTests.xctest" || true  # swift test leaves it running
    echo "The test run was stopped after ${TEST_TIMEOUT:-900} s. Tests that started and never ended:"
    python3 scripts/unfinished-tests.py "$log" || true
fi
phase "the tests"
[ "$status" -eq 0 ] || exit "$status"
# The Swift blocks of the README and the DocC articles, each compiled as pasted into a package
# that depends on Courier; first, no prose paragraph may appear in two of those documents.
bash scripts/readme-check.sh
phase "the README and DocC examples"
