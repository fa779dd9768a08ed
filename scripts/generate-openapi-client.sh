#!/usr/bin/env bash
# Regenerates the client that CourierOpenAPITests exercise, from
# Tests/CourierOpenAPITests/openapi.yaml, with swift-openapi-generator's CLI. The output is
# committed (Tests/CourierOpenAPITests/Generated), so neither the build nor CI runs the
# generator: run this after changing the document, and commit what it writes.
# The generator is built once in a scratch package outside the repository (GENERATOR_DIR,
# default /tmp/courier-openapi-generator); it pulls OpenAPIKit and Yams, which Courier never does.
set -euo pipefail
cd "$(dirname "$0")/.."
version="1.14.3"
tool_dir="${GENERATOR_DIR:-/tmp/courier-openapi-generator}"
mkdir -p "$tool_dir"
cat >"$tool_dir/Package.swift" <<SWIFT
// swift-tools-version: 6.0
import PackageDescription
let package = Package(
    name: "courier-openapi-generator",
    dependencies: [.package(url: "https://github.com/apple/swift-openapi-generator", exact: "$version")],
    targets: []
)
SWIFT
(cd "$tool_dir" && swift build --product swift-openapi-generator >/dev/null)
generator="$tool_dir/.build/debug/swift-openapi-generator"
tests="Tests/CourierOpenAPITests"
rm -rf "$tests/Generated"
mkdir -p "$tests/Generated"
"$generator" generate "$tests/openapi.yaml" \
    --config "$tests/openapi-generator-config.yaml" \
    --output-directory "$tests/Generated"
echo "generated: $(ls "$tests/Generated" | tr '\n' ' ')(swift-openapi-generator $version)"
