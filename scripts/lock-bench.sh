#!/usr/bin/env bash
# Synchronization.Mutex against LockedValue (the TSan-visible lock every module uses), in one run.
#   scripts/lock-bench.sh [operations per thread]
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/lock-bench
mkdir -p "$out"
swiftc -O -module-name LockBench -package-name Courier -o "$out/lock-bench" \
    Sources/Core/LockedValue.swift Benchmarks/LockBench/main.swift
"$out/lock-bench" "$@"
