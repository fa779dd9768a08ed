#!/usr/bin/env bash
# Interrupts courier-bench mid-run and checks that it leaves nothing behind: no nginx, no
# PostgreSQL, no child client, no temporary folder or file. Twice: SIGTERM during the fleet
# scenario (nginx, PostgreSQL and client processes running), SIGINT during the end-to-end one.
#   scripts/bench-interrupt-check.sh [path/to/courier-bench]   (Benchmarks/.build/debug/courier-bench)
# The benchmark must be built with the Peers trait (the default) for the fleet scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
bench="${1:-Benchmarks/.build/debug/courier-bench}"
[ -x "$bench" ] || { echo "bench-interrupt-check: no $bench (build it first)"; exit 2; }
tmp="${TMPDIR:-/tmp}"
failed=0

# Processes whose environment holds `mark` (the benchmark's children and servers inherit it) or
# whose command line names one of the benchmark's folders.
leftovers() {
    local mark="$1" pid="$2" found=""
    for proc in /proc/[0-9]*; do
        [ "${proc#/proc/}" = "$$" ] && continue
        # A process may end while it is read: its files are then gone (hence the braces).
        if { tr '\0' '\n' <"$proc/environ"; } 2>/dev/null | grep -qx "COURIER_BENCH_RUN=$mark" ||
            { tr '\0' ' ' <"$proc/cmdline"; } 2>/dev/null | grep -q "courier-bench-[a-z]*-$pid"; then
            found="$found ${proc#/proc/}($({ tr '\0' ' ' <"$proc/cmdline"; } 2>/dev/null | cut -c1-80))"
        fi
    done
    echo "$found"
}

# interrupt SIGNAL WAIT_FOR FILTER [client]: starts the benchmark, waits until its output shows
# WAIT_FOR (and, with `client`, until a client process runs), sends SIGNAL, and checks what is
# left.
interrupt() {
    local signal="$1" wait_for="$2" filter="$3" needs_client="$4"
    local mark log pid status started
    mark="check-$$-$RANDOM"
    log=$(mktemp)
    started=$(date +%s)
    COURIER_BENCH_RUN="$mark" stdbuf -oL -eL "$bench" --quick --filter "$filter" --output "$log.json" >"$log" 2>&1 &
    pid=$!
    while ! grep -q "$wait_for" "$log"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "bench-interrupt-check: courier-bench ended before \"$wait_for\":"; cat "$log"; failed=1; return
        fi
        if [ $(($(date +%s) - started)) -gt 180 ]; then
            echo "bench-interrupt-check: no \"$wait_for\" after 180 s:"; cat "$log"; kill -9 "$pid"; failed=1; return
        fi
        sleep 0.2
    done
    # Then, for a scenario that runs clients, until one runs (60 s at most).
    local before="" clients=""
    if [ "$needs_client" = client ]; then
        for _ in $(seq 600); do
            clients=$(pgrep -P "$pid" -f -- "-child" | tr '\n' ' ' || true)
            [ -n "$clients" ] && break
            sleep 0.05
        done
    else
        sleep 2
        before=$(leftovers "$mark" "$pid")
    fi
    kill -0 "$pid" 2>/dev/null || { echo "bench-interrupt-check: courier-bench ended before the signal"; failed=1; return; }
    kill "-$signal" "$pid"
    set +e
    timeout 60 tail --pid="$pid" -f /dev/null
    wait "$pid"
    status=$?
    set -e
    sleep 0.5  # the kernel's SIGKILL of the children (their parent-death signal) is asynchronous
    local after folders
    after=$(leftovers "$mark" "$pid")
    folders=$(ls -d "$tmp"/courier-bench-*"$pid"* "$tmp"/courier-callgrind-* 2>/dev/null || true)
    echo "bench-interrupt-check: SIG$signal while running$before${clients:+ clients $clients}"
    echo "bench-interrupt-check: exit $status after SIG$signal; left: processes [${after# }], paths [$folders]"
    if [ -n "$after" ] || [ -n "$folders" ]; then failed=1; fi
    if [ "$status" -ne $((128 + $(kill -l "$signal"))) ]; then
        echo "bench-interrupt-check: expected exit $((128 + $(kill -l "$signal")))"; tail -5 "$log"; failed=1
    fi
    if [ "$needs_client" = client ] && [ -z "$clients" ]; then
        echo "bench-interrupt-check: no client was running when the signal came"; failed=1
    fi
    rm -f "$log" "$log.json"
}

interrupt TERM "PostgreSQL:" fleet servers
interrupt INT "nginx:" e2e client
[ "$failed" -eq 0 ] && echo "bench-interrupt-check: interrupted twice, nothing left behind"
exit "$failed"
