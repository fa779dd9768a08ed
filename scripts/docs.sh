#!/usr/bin/env bash
# Builds the DocC documentation of every library module (swift-docc-plugin), one combined
# archive in .build/plugins/Swift-DocC/outputs/Courier.doccarchive. Any DocC warning (a broken
# symbol link, an article nobody curates) fails this. The Swift blocks of the articles are
# compiled as pasted by scripts/readme-check.sh, with the README's.
#   scripts/docs.sh [SWIFT PACKAGE OPTIONS]   e.g. --traits PostgreSQL, as CI passes so that the
#   test command's build (same traits, same flags) is reused instead of compiled again.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(CourierCore CourierTransport CourierCaching CourierJSON CourierServices CourierTesting
    CourierXML CourierLifecycle CourierOpenAPI Courier)
arguments=()
for target in "${targets[@]}"; do arguments+=(--target "$target"); done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! swift package "$@" generate-documentation --enable-experimental-combined-documentation \
    "${arguments[@]}" --warnings-as-errors >"$log" 2>&1; then
    grep -A12 -E "^(warning|error): " "$log" | head -200
    echo "Documentation: DocC reported a problem (warnings are errors here)"
    exit 1
fi
echo "Documentation: every module built with no DocC warning; combined archive in .build/plugins/Swift-DocC/outputs/Courier.doccarchive"
