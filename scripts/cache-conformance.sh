#!/usr/bin/env bash
# Courier's HTTP cache against the public cache-tests suite (https://github.com/http-tests/cache-tests),
# in its browser form (300 tests), compared group by group with the browsers' published results.
#
#   bash scripts/cache-conformance.sh SUITE_DIR [RESULTS_FILE] [--5xx-values]
#
# The proxy's resource takes 2xx to 4xx answers as values and a 5xx as an error, as a resource
# under `.http()` does by default (so 5xx answers are never stored); with --5xx-values every
# status is a value (a resource whose acceptableStatus includes 5xx).
#
# SUITE_DIR is a checkout of the suite (it is not vendored here: clone it where you have a
# network). Needs Node.js 18 or later. Builds cache-conformance-proxy (Benchmarks/, release,
# without the peers), starts the suite's origin server and the proxy on free loopback ports,
# runs the suite through the proxy (about a minute), prints the table and the tests a browser
# passes and Courier does not, and stops both servers. The raw results go to RESULTS_FILE
# (default /tmp/cache-conformance-results.json).
set -euo pipefail
suite="${1:?usage: scripts/cache-conformance.sh SUITE_DIR [RESULTS_FILE] [--5xx-values]}"
suite="$(cd "$suite" && pwd)"
results="$(realpath -m "${2:-/tmp/cache-conformance-results.json}")"
values="${3:-}"
cd "$(dirname "$0")/.."
[ -f "$suite/tests/index.mjs" ] || { echo "cache-conformance: $suite is not a cache-tests checkout" >&2; exit 2; }
command -v node >/dev/null || bash scripts/install-deps.sh nodejs
bash scripts/install-deps.sh libcurl4-openssl-dev zlib1g-dev libbrotli-dev libzstd-dev
(cd Benchmarks && swift build -c release --product cache-conformance-proxy --disable-default-traits \
    --scratch-path ../.build-bench 2>&1 | grep -E "error|Build" | tail -20)
proxy_binary=.build-bench/release/cache-conformance-proxy

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
work=$(mktemp -d)
origin_pid=""
proxy_pid=""
cleanup() {
    [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null || true
    [ -n "$origin_pid" ] && kill "$origin_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

origin_port=$(free_port)
npm_config_protocol=http npm_config_port="$origin_port" npm_config_pidfile="$work/origin.pid" \
    node "$suite/test-engine/server/server.mjs" >"$work/origin.log" 2>&1 &
origin_pid=$!
"$proxy_binary" "http://127.0.0.1:$origin_port" 0 $values >"$work/proxy.log" 2>&1 &
proxy_pid=$!
ready=""
for _ in $(seq 100); do
    if grep -q "^port " "$work/proxy.log" 2>/dev/null && curl -s -o /dev/null "http://127.0.0.1:$origin_port/"; then
        ready=1
        break
    fi
    sleep 0.1
done
proxy_port=$(sed -n 's/^port //p' "$work/proxy.log")
if [ -z "$ready" ] || [ -z "$proxy_port" ]; then
    echo "cache-conformance: the origin or the proxy did not start" >&2
    cat "$work/proxy.log" "$work/origin.log" >&2
    exit 1
fi
node scripts/cache-conformance.mjs "$suite" "http://127.0.0.1:$proxy_port" "$results"
