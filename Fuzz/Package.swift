// swift-tools-version:5.4
import PackageDescription

// libFuzzer targets for every parser that reads bytes a server or a file controls. Built by
// scripts/fuzz.sh with `-sanitize=fuzzer,address -parse-as-library -enable-testing`, in release,
// against the root package (by path), so internal parsers are reached with `@testable import`.
// Each executable defines `LLVMFuzzerTestOneInput`; libFuzzer supplies `main`.
//
// Tools version 5.4 on purpose: from 5.5 on, SwiftPM renames an executable's entry point to
// `<Module>_main` (so tests can link executables) and points `main` at it, which leaves no room
// for libFuzzer's `main`. 5.4 also still names a path dependency ("Courier"), whatever folder
// the repository was cloned into.

func fuzzTarget(_ name: String, _ products: [String], extra: [Target.Dependency] = []) -> Target {
    .executableTarget(
        name: name,
        dependencies: ["FuzzSupport"] + extra + products.map { .product(name: $0, package: "Courier") },
        path: "Sources/\(name)"
    )
}

let package = Package(
    name: "CourierFuzz",
    dependencies: [.package(name: "Courier", path: "..")],
    targets: [
        .target(name: "FuzzSupport", path: "Sources/FuzzSupport"),
        .target(
            name: "FuzzDecoding",
            dependencies: ["FuzzSupport", .product(name: "CourierTransport", package: "Courier")],
            path: "Sources/FuzzDecoding"
        ),
        fuzzTarget("FuzzJSON", ["CourierJSON"]),
        fuzzTarget("FuzzHead", ["CourierTransport"]),
        fuzzTarget("FuzzInflate", ["CourierTransport"], extra: ["FuzzDecoding"]),
        fuzzTarget("FuzzBrotli", ["CourierTransport"], extra: ["FuzzDecoding"]),
        fuzzTarget("FuzzZstd", ["CourierTransport"], extra: ["FuzzDecoding"]),
        fuzzTarget("FuzzDate", ["CourierCaching"]),
        fuzzTarget("FuzzCache", ["CourierCaching", "CourierTransport"]),
        fuzzTarget("FuzzFixture", ["CourierTesting", "CourierTransport"]),
        fuzzTarget("FuzzHAR", ["CourierTesting", "CourierTransport"]),
        fuzzTarget("FuzzEvents", ["CourierServices"]),
    ]
)
