// swift-tools-version: 6.2
import PackageDescription

// courier-bench: Courier against real peers in one run. Its own package, so that Courier's
// users never pull the peers (async-http-client, FoundationNetworking).
let package = Package(
    name: "CourierBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Courier", path: ".."),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        .target(name: "CRawCurl", path: "Sources/CRawCurl", linkerSettings: [.linkedLibrary("curl"), .linkedLibrary("z")]),
        .executableTarget(
            name: "courier-bench",
            dependencies: [
                "CRawCurl",
                .product(name: "Courier", package: "Courier"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            path: "Sources/courier-bench",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
