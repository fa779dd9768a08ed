#!/usr/bin/env bash
# Builds the DocC documentation of every library module, one combined archive in
# .build/documentation/Courier.doccarchive (`docc preview`-able; `docc process-archive
# transform-for-static-hosting` makes a website of it). Any DocC warning (a broken symbol link,
# an article nobody curates) fails this. The Swift blocks of the articles are compiled as pasted
# by scripts/readme-check.sh, with the README's.
#   scripts/docs.sh [--skip-build] [SWIFT BUILD OPTIONS]   e.g. --traits PostgreSQL, as CI
#   passes so that the test command's build (same traits, same flags) is reused instead of
#   compiled again; --skip-build (CI, right after the test command) does not even ask `swift
#   build`, which takes 15 to 50 s to find nothing to do.
# The modules are built with `swift build`, then scripts/docs.py extracts their symbol graphs
# and runs `docc convert` and `docc merge` itself: what swift-docc-plugin does, without the one
# `swift build` per module it runs (15 s each here, nothing to compile: 190 s in all, now 30).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(CourierCore CourierTransport CourierCaching CourierJSON CourierServices CourierTesting
    CourierXML CourierLifecycle CourierOpenAPI Courier)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
skip_build=0
if [ "${1:-}" = "--skip-build" ]; then
    skip_build=1
    shift
fi
if [ "$skip_build" -eq 0 ] && ! swift build "$@" >"$log" 2>&1; then
    tail -40 "$log"
    echo "Documentation: the build failed"
    exit 1
fi
python3 scripts/docs.py "$(swift build "$@" --show-bin-path)" .build/documentation "${targets[@]}"
echo "Documentation: every module built with no DocC warning; combined archive in .build/documentation/Courier.doccarchive"
