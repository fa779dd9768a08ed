#!/usr/bin/env bash
# Compiles every Swift block of the README as a newcomer would paste it: each into an empty
# file of a package that depends on Courier (scripts/readme-blocks.py writes that package in
# .build-readme). A block that does not compile as pasted fails this, naming its README line.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=".build-readme/package"
rm -rf "$scratch/Sources" "$scratch/Tests"
python3 scripts/readme-blocks.py README.md "$scratch" "$PWD"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! (cd "$scratch" && swift build --build-tests --scratch-path ../build >"$log" 2>&1); then
    grep -E "error:" "$log" | grep "^/" | sort -u || cat "$log"
    echo "README examples: a block does not compile as pasted (ReadmeLineN is the README line of its block)"
    exit 1
fi
echo "README examples: every block compiles as pasted"
