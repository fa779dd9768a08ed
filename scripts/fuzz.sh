#!/usr/bin/env bash
# Fuzzes CourierJSON with libFuzzer and AddressSanitizer for a bounded time.
#   scripts/fuzz.sh [seconds]   (default 60)
# Exits non-zero on a crash, a sanitizer report or a timeout; the reproducer is left in
# .build/fuzz/. Seeds: Fuzz/corpus plus the decoder's own test documents.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
out=.build/fuzz
mkdir -p "$out/corpus"
cp Fuzz/corpus/* "$out/corpus/" 2>/dev/null || true

swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzJSON \
    Fuzz/FuzzJSON.swift $(find Sources/JSON -name '*.swift' | sort) -o "$out/fuzz-json"

cd "$out"
./fuzz-json -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
    -print_final_stats=1 corpus 2>&1 | tail -25
