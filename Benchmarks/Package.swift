// swift-tools-version: 6.2
import PackageDescription

// courier-bench: Courier against real peers in one run. Its own package, so that Courier's
// users never pull the peers (async-http-client, FoundationNetworking).
let package = Package(
    name: "CourierBenchmarks",
    platforms: [.macOS(.v15)],
    // `Peers` (on by default) builds the peers and the scenarios that need them. Without it
    // (`--disable-default-traits`) courier-bench builds Courier alone, in a few minutes in release:
    // enough for the instruction counts (scripts/instructions.sh), parse, cache and the soak.
    traits: [
        .trait(
            name: "Peers",
            description:
                "async-http-client, URLSession, OpenAPI clients, the Hummingbird gateway and the PostgreSQL fleet."
        ),
        .default(enabledTraits: ["Peers"]),
    ],
    dependencies: [
        // The PostgreSQL trait builds CourierPostgresCache, for the fleet scenario.
        .package(
            name: "Courier", path: "..", traits: [.trait(name: "PostgreSQL", condition: .when(traits: ["Peers"]))]),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", exact: "1.5.0"),
    ],
    targets: [
        .target(
            name: "CRawCurl", path: "Sources/CRawCurl",
            linkerSettings: [
                .linkedLibrary("curl"), .linkedLibrary("z"), .linkedLibrary("brotlidec"), .linkedLibrary("brotlienc"),
                .linkedLibrary("zstd"),
            ]),
        // The generated client of the `openapi` row (committed; scripts/generate-openapi-client.sh).
        .target(
            name: "BenchOpenAPIClient",
            dependencies: [.product(name: "OpenAPIRuntime", package: "swift-openapi-runtime")],
            path: "Sources/BenchOpenAPIClient",
            exclude: ["openapi.yaml", "openapi-generator-config.yaml"]
        ),
        .executableTarget(
            name: "courier-bench",
            dependencies: [
                "CRawCurl",
                .product(name: "Courier", package: "Courier"),
                .target(name: "BenchOpenAPIClient", condition: .when(traits: ["Peers"])),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["Peers"])),
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Peers"])),
                .product(name: "CourierOpenAPI", package: "Courier", condition: .when(traits: ["Peers"])),
                .product(name: "CourierPostgresCache", package: "Courier", condition: .when(traits: ["Peers"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Peers"])),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: .when(traits: ["Peers"])),
                .product(
                    name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client",
                    condition: .when(traits: ["Peers"])),
            ],
            path: "Sources/courier-bench",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // Courier's HTTP cache as a proxy, for the public cache-tests suite
        // (scripts/cache-conformance.sh); Courier alone, so it builds without the peers.
        .executableTarget(
            name: "cache-conformance-proxy",
            dependencies: [.product(name: "Courier", package: "Courier")],
            path: "Sources/cache-conformance-proxy",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
