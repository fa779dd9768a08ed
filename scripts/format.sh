#!/usr/bin/env bash
# Swift formatting, with the toolchain's `swift format` and the repository's `.swift-format`.
#
#   bash scripts/format.sh          # CI: `swift format lint --strict`; any finding fails
#   bash scripts/format.sh --fix    # formats the tree in place, then lints what is left
#
# Every tracked Swift file is checked except generated code (the OpenAPI clients under
# `Generated/`, rewritten by scripts/generate-openapi-client.sh). A line the formatter must not
# touch takes `// swift-format-ignore: RuleName` on the line before its declaration, with why.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.swift' | grep -v '/Generated/')
if [ "${1:-}" = "--fix" ]; then
    swift format format --in-place --parallel --configuration .swift-format "${files[@]}"
fi
started=$(date +%s)
swift format lint --strict --parallel --configuration .swift-format "${files[@]}"
echo "format: ${#files[@]} files clean ($(($(date +%s) - started)) s)"
