#!/usr/bin/env bash
# Regenerates, with swift-openapi-generator's CLI, the two committed generated clients:
# the one CourierOpenAPITests exercise (Tests/CourierOpenAPITests/openapi.yaml -> Generated) and
# the one courier-bench's `openapi` row sends through both transports
# (Benchmarks/Sources/BenchOpenAPIClient/openapi.yaml -> Generated). Neither the build nor CI
# runs the generator: run this after changing a document, and commit what it writes.
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
# generate FOLDER: FOLDER/openapi.yaml with FOLDER/openapi-generator-config.yaml into FOLDER/Generated.
generate() {
    local folder="$1"
    rm -rf "$folder/Generated"
    mkdir -p "$folder/Generated"
    "$generator" generate "$folder/openapi.yaml" \
        --config "$folder/openapi-generator-config.yaml" \
        --output-directory "$folder/Generated" >/dev/null
    echo "generated in $folder/Generated: $(ls "$folder/Generated" | tr '\n' ' ')(swift-openapi-generator $version)"
}
generate Tests/CourierOpenAPITests
generate Benchmarks/Sources/BenchOpenAPIClient
