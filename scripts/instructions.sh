#!/usr/bin/env bash
# Instructions per request under valgrind's callgrind, which counts the same on a busy machine:
# raw libcurl multi (C), CurlTransport.send (of one URL, and of the distinct URLs a default load()
# asks) and load() with the default configuration, small identity at c=1 and c=64, against an
# nginx the benchmark starts; load() is reported against send of the same requests. Writes
# instructions.json.
# Pass --quick for fewer requests. An A/B of a change: run it on both commits, compare.
# Pass --gate to check the counts against the ledger's (PERFORMANCE.md,
# Benchmarks/instructions-baseline.json) afterwards: more than 3% over fails. With --gate only the
# clients the gate checks are counted (CurlTransport and a default load(): half the valgrind
# runs); pass --all with --gate to count the others too.
# COURIER_CALLGRIND_KEEP=<dir> keeps the profiles, for callgrind_annotate --inclusive=yes.
#
# valgrind 3.19 (Debian 12) dies with SIGSEGV on every Swift program with an async main: the
# main thread parks in libdispatch's _dispatch_sigsuspend, which hands sigsuspend a
# `static const sigset_t` in read-only memory, and valgrind's wrapper writes into that mask.
# A one-function preload copies the mask to the stack first; nothing else changes.
# And its DWARF reader gives up on the DWARF 5 that Swift's toolchain emits ("unhandled dwarf2
# abbrev form code 0x25 ... Possibly corrupted debuginfo file. I can't recover."), so the
# benchmark runs from a copy without debug info (symbols stay, for callgrind_annotate).
set -euo pipefail
cd "$(dirname "$0")/.."
gate=0
all=0
arguments=()
for argument in "$@"; do
    case "$argument" in
        --gate) gate=1 ;;
        --all) all=1 ;;
        *) arguments+=("$argument") ;;
    esac
done
if [ "$gate" -eq 1 ] && [ "$all" -eq 0 ]; then arguments+=(--gated-only); fi
output="${OUTPUT:-$PWD/Benchmarks/instructions.json}"
bash scripts/install-deps.sh libcurl4-openssl-dev zlib1g-dev libbrotli-dev libzstd-dev nginx gzip valgrind
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/sigsuspend.c" <<'C'
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
/* A writable copy of the mask: valgrind writes into the one it is given. */
int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &copy, _NSIG / 8);
}
C
cc -shared -fPIC -O2 -o "$work/sigsuspend.so" "$work/sigsuspend.c"
cd Benchmarks
# Without the `Peers` trait: Courier and the raw C client only, a release build of minutes (the
# peers add some 25 minutes of CPU). Its own build folder, so the full debug build stays.
swift build -c release --product courier-bench --disable-default-traits --scratch-path .build-light
objcopy --strip-debug .build-light/release/courier-bench "$work/courier-bench"
COURIER_VALGRIND_PRELOAD="$work/sigsuspend.so" "$work/courier-bench" --filter instructions \
    --output "$output" ${arguments[@]+"${arguments[@]}"}
cd ..
if [ "$gate" -eq 1 ]; then python3 scripts/instruction-gate.py "$output" Benchmarks/instructions-baseline.json; fi
