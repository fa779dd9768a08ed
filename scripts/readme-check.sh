#!/usr/bin/env bash
# Compiles every Swift block of the README as a newcomer would paste it: each into an empty
# file of its own (scripts/readme-blocks.py writes them, one folder per block, as the targets of
# a package that depends on Courier, in .build-readme). The DocC articles' blocks
# (Sources/*/*.docc) are compiled the same way. A block that does not compile as pasted fails
# this, naming its file and line. Before that, a prose paragraph found in both the README and an
# article, or in two articles, fails it too, naming both places: each topic has one home
# (scripts/readme-blocks.py says what counts).
#
# The blocks are type-checked with `swiftc -typecheck` against the modules of the package's own
# debug build (the one `scripts/test.sh` just made, with the PostgreSQL trait), with the module
# search paths and C module maps that build used (read from .build/debug.yaml): nothing is
# built twice. Each block is its own module, in the Swift 6 language mode, as in a new package.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=".build-readme/package"
rm -rf "$scratch/Sources" "$scratch/Tests"
python3 scripts/readme-blocks.py README.md "$scratch" "$PWD" Sources/*/*.docc/*.md
if [ ! -f .build/debug.yaml ] || [ ! -e .build/debug/Modules/Courier.swiftmodule ]; then
    swift build --build-tests --traits PostgreSQL
fi
flags=".build-readme/flags"
python3 - .build/debug.yaml >"$flags" <<'PY'
import re, sys
manifest = open(sys.argv[1]).read()
found = []
def add(*args):
    if args not in found:
        found.append(args)
for m in re.finditer(r'"-I","([^"]*)"', manifest):
    add("-I", m.group(1))
for m in re.finditer(r'"-Xcc","(-fmodule-map-file=[^"]*|-I[^"]+)"', manifest):
    add("-Xcc", m.group(1))
for m in re.finditer(r'"-Xcc","-I","-Xcc","([^"]*)"', manifest):
    add("-Xcc", "-I" + m.group(1))
print("\n".join(arg for args in found for arg in args))
PY
log=".build-readme/log"
: >"$log"
# One swiftc per block, two at a time; each prints its errors under its folder's name.
check() {
    local dir=$1 name
    name=$(basename "$dir")
    mapfile -t args <".build-readme/flags"
    if ! out=$(swiftc -typecheck -swift-version 6 -module-name "$name" "${args[@]}" "$dir"/*.swift 2>&1); then
        printf '%s\n' "$out" | grep -E "^[^ ].*error:" | sort -u
        echo "FAILED $name"
    fi
}
export -f check
find "$scratch/Sources" "$scratch/Tests" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | sort |
    xargs -P 2 -I{} bash -c 'check "$1"' _ {} >>"$log"
if grep -q "^FAILED " "$log"; then
    cat "$log"
    echo "README and DocC examples: a block does not compile as pasted (ReadmeLineN is the README line"
    echo "of its block, GettingStartedLineN a line of Sources/*/*.docc/GettingStarted.md)"
    exit 1
fi
echo "README and DocC examples: every block compiles as pasted ($(find "$scratch/Sources" "$scratch/Tests" -mindepth 1 -maxdepth 1 -type d | wc -l) blocks)"
