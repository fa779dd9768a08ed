#!/usr/bin/env bash
# The README's test command: installs what is missing, builds with warnings as errors,
# and runs every test suite (Swift Testing).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh libcurl4-openssl-dev zlib1g-dev openssl libxml2 nginx
export COURIER_STRICT=1
swift build --build-tests
swift test --skip-build
