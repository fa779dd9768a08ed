#!/usr/bin/env bash
# Fuzzes Courier's parsers with libFuzzer and AddressSanitizer, each for a bounded time.
#   scripts/fuzz.sh [SECONDS [TARGET...]]   (default 60 seconds, every target)
# Targets: json head inflate brotli zstd date cache fixture har events (see Fuzz/Package.swift).
# The Fuzz package is built in release with -sanitize=fuzzer,address against this checkout, so
# internal parsers are reached with @testable import. Seeds: Fuzz/corpus/<target>/; the growing
# corpus and any reproducer (crash-*, leak-*, timeout-*) are left in .build/fuzz/<target>/.
# Runs two targets at a time (FUZZ_JOBS). Prints each target's run count; exits non-zero on a
# crash, a sanitizer report, a failed invariant or a timeout.
set -euo pipefail
# Let libFuzzer and ASan report a trap; the Swift runtime's backtracer would fight ASan for it.
export SWIFT_BACKTRACE=enable=no
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
all=(json head inflate brotli zstd date cache fixture har events)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

product() {
    case "$1" in
        json) echo FuzzJSON ;; head) echo FuzzHead ;; inflate) echo FuzzInflate ;; date) echo FuzzDate ;;
        brotli) echo FuzzBrotli ;; zstd) echo FuzzZstd ;;
        cache) echo FuzzCache ;; fixture) echo FuzzFixture ;; har) echo FuzzHAR ;; events) echo FuzzEvents ;;
        *) echo "unknown fuzz target '$1' (known: ${all[*]})" >&2; return 1 ;;
    esac
}
for target in "${targets[@]}"; do product "$target" >/dev/null; done

build_flags=(-c release --package-path Fuzz --scratch-path .build/fuzz-build
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -enable-testing)
start=$(date +%s)
# SwiftPM keeps the build plan of a path dependency when files are only added to or removed from
# it (the new file's module then fails to find what it declares): drop the plan when the list of
# Courier's sources changed since the last fuzz build.
sources="$(find Sources Fuzz/Sources -name '*.swift' | sort | md5sum)"
if [ "$(cat .build/fuzz-build/sources.md5 2>/dev/null)" != "$sources" ]; then
    rm -f .build/fuzz-build/release.yaml
    mkdir -p .build/fuzz-build && echo "$sources" > .build/fuzz-build/sources.md5
fi
if [ ${#targets[@]} -eq ${#all[@]} ]; then
    swift build "${build_flags[@]}"
else
    for target in "${targets[@]}"; do swift build "${build_flags[@]}" --product "$(product "$target")"; done
fi
echo "fuzz: built ${targets[*]} in $(($(date +%s) - start)) s"
bin="$(swift build "${build_flags[@]}" --show-bin-path)"

# Two targets at a time: libFuzzer runs on one core, and CI's machine has two.
parallel="${FUZZ_JOBS:-2}"
run_target() {
    local target="$1" work=".build/fuzz/$1"
    mkdir -p "$work/corpus"
    cp Fuzz/corpus/"$target"/* "$work/corpus/" 2>/dev/null || true
    set +e
    (cd "$work" && "$bin/$(product "$target")" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
        -max_len=65536 -print_final_stats=1 corpus >fuzz.log 2>&1)
    echo $? >"$work/exit"
}
running=0
for target in "${targets[@]}"; do
    if [ "$running" -ge "$parallel" ]; then wait -n || true; running=$((running - 1)); fi
    run_target "$target" &
    running=$((running + 1))
done
wait
summary=()
status=0
for target in "${targets[@]}"; do
    work=".build/fuzz/$target"
    log="$work/fuzz.log"
    code=$(cat "$work/exit" 2>/dev/null || echo 1)
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    if [ "$code" -ne 0 ]; then
        status=1
        summary+=("$target: FAILED (exit $code) after $runs runs; see $log;"
            "  reproduce: SWIFT_BACKTRACE=enable=no $bin/$(product "$target") $work/<crash-file>")
        tail -40 "$log"
    else
        summary+=("$target: $runs runs in $seconds s, corpus $(find "$work/corpus" -type f | wc -l) inputs")
    fi
done
printf 'fuzz: %s\n' "${summary[@]}"
exit $status
