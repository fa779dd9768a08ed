public import Foundation

/// Mock mode: serves every resource load from the resource's fixture, a `<ResourceName>.mock`
/// file, so a whole app or test runs without a network.
///
/// ```swift
/// var configuration = RequestCoordinator.Configuration()
/// configuration.responder = Fixtures(bundle: .module, subdirectory: "Fixtures")
/// let coordinator = RequestCoordinator(transport: MockTransport(), configuration: configuration)
/// let user = try await UserService(id: 7).load(using: coordinator)   // Fixtures/UserService.mock
/// ```
///
/// **Names**: the resource's type name, so `UserService` reads `UserService.mock`. A generic
/// resource tries its full name first, then its base name: `Page<User>` reads `Page<User>.mock`,
/// else `Page.mock`. A ``MockableResource`` that returns a ``MockResponse`` needs no file.
/// See ``MockResponse`` for the file format. A missing fixture fails the load with
/// `mockMissing`, naming every file looked for.
public struct Fixtures: ResourceResponder {
    private enum Source: Sendable {
        case directory(String)
        case bundle(Bundle, subdirectory: String?)
    }

    private let source: Source

    /// Fixtures in `directory`.
    public init(directory: String) { source = .directory(directory) }

    /// Fixtures among a bundle's resources (`Bundle.module` of a test target that declares
    /// `resources: [.copy("Fixtures")]`, with `subdirectory: "Fixtures"`).
    public init(bundle: Bundle, subdirectory: String? = nil) { source = .bundle(bundle, subdirectory: subdirectory) }

    /// The file names looked for, in order, for resources of type `type`.
    public static func fileNames<R: Resource>(for type: R.Type) -> [String] {
        let name = String(describing: type)
        guard let generic = name.firstIndex(of: "<") else { return [name + ".mock"] }
        return [name + ".mock", String(name[..<generic]) + ".mock"]
    }

    public func response<R: Resource>(for resource: R, request: HTTPRequest) async throws -> TransportResponse {
        if let mockable = resource as? any MockableResource, let response = mockable.mockResponse {
            return response.transportResponse
        }
        var looked: [String] = []
        for name in Self.fileNames(for: R.self) {
            let path = location(of: name)
            looked.append(path ?? name)
            guard let path, let bytes = FileManager.default.contents(atPath: path) else { continue }
            return try MockResponse(fixture: bytes, source: path).transportResponse
        }
        throw ServiceError(
            .mockMissing,
            "No fixture for \(R.self) (\(request.method) \(request.path ?? "/")); looked for \(looked.joined(separator: ", "))."
        )
    }

    private func location(of name: String) -> String? {
        switch source {
        case .directory(let directory):
            return (directory.hasSuffix("/") ? directory : directory + "/") + name
        case .bundle(let bundle, let subdirectory):
            let base = String(name.dropLast(".mock".count))
            if let url = bundle.url(forResource: base, withExtension: "mock", subdirectory: subdirectory) {
                return url.path
            }
            let root = bundle.resourceURL ?? bundle.bundleURL
            let folder = subdirectory.map { root.appendingPathComponent($0) } ?? root
            return folder.appendingPathComponent(name).path
        }
    }
}
