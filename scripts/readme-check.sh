#!/usr/bin/env bash
# Compiles every Swift block of the README as a newcomer would paste it: each into an empty
# file of a package that depends on Courier (scripts/readme-blocks.py writes that package in
# .build-readme). The DocC articles' blocks (Sources/*/*.docc) are compiled the same way. A
# block that does not compile as pasted fails this, naming its file and line. Before the build,
# a prose paragraph found in both the README and an article, or in two articles, fails it too,
# naming both places: each topic has one home (scripts/readme-blocks.py says what counts).
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=".build-readme/package"
rm -rf "$scratch/Sources" "$scratch/Tests"
python3 scripts/readme-blocks.py README.md "$scratch" "$PWD" Sources/*/*.docc/*.md
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! (cd "$scratch" && swift build --build-tests --scratch-path ../build >"$log" 2>&1); then
    grep -E "error:" "$log" | grep "^/" | sort -u || cat "$log"
    echo "README and DocC examples: a block does not compile as pasted (ReadmeLineN is the README line"
    echo "of its block, GettingStartedLineN a line of Sources/*/*.docc/GettingStarted.md)"
    exit 1
fi
echo "README and DocC examples: every block compiles as pasted"
