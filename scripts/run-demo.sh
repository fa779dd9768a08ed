#!/usr/bin/env bash
# The README's main job: installs what is missing, builds in release, and runs the demo
# against the loopback server it starts itself. Pass --quick for a short run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh libcurl4-openssl-dev zlib1g-dev
swift build -c release --product courier-demo
.build/release/courier-demo "$@"
