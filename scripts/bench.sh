#!/usr/bin/env bash
# The README's main job: installs what is missing (curl and zlib headers, nginx, PostgreSQL),
# builds the benchmark in release, and runs it against an nginx and a PostgreSQL cluster it
# starts on 127.0.0.1.
# Pass --quick for a run under a minute, --filter e2e,codings,typed,openapi,gateway,many,events,parse,decode,cache,coalescing,fleet to pick scenarios.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh libcurl4-openssl-dev zlib1g-dev libbrotli-dev libzstd-dev nginx gzip postgresql wrk
cd Benchmarks
swift build -c release --product courier-bench
.build/release/courier-bench "$@"
