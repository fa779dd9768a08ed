import Courier
import Foundation
import GatewayApp
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// What the loopback catalog saw and decides: issued and revoked tokens, requests per path.
actor UpstreamState {
    private(set) var grants = 0
    private(set) var revoked: Set<String> = []
    private(set) var productRequests: [String: Int] = [:]
    private(set) var conditionalRequests = 0
    /// The `X-Deadline-Ms` of each product request, in order ("" when it had none).
    private(set) var deadlineFields: [String] = []
    private var issued: Set<String> = []

    func grant() -> String {
        grants += 1
        let token = "token-\(grants)"
        issued.insert(token)
        return token
    }

    func accepts(_ authorization: String?) -> Bool {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return false }
        let token = String(authorization.dropFirst("Bearer ".count))
        return issued.contains(token) && !revoked.contains(token)
    }

    func revokeAll() { revoked = issued }

    func record(path: String, conditional: Bool, deadline: String? = nil) {
        productRequests[path, default: 0] += 1
        deadlineFields.append(deadline ?? "")
        if conditional { conditionalRequests += 1 }
    }

    func requests(to path: String) -> Int { productRequests[path] ?? 0 }
}

/// A catalog on 127.0.0.1 (Hummingbird, a port of its own): `POST /oauth/token` (Basic
/// `gateway:s3cret`), `GET /v1/products/{id}` (bearer token, `Cache-Control: max-age=60` and an
/// ETag; 404 for ids over 100, 500 for id 500, one second for id 99), `GET /v1/products?q=`.
struct Upstream {
    let state: UpstreamState
    let port: Int
    var baseURL: String { "http://127.0.0.1:\(port)/v1" }
    var tokenURL: String { "http://127.0.0.1:\(port)/oauth/token" }

    static let products = [1: "Desk lamp", 2: "Lamp shade", 3: "Chair", 99: "Slow stool"]

    /// Runs `body` with a catalog listening, and stops it afterwards.
    static func with<T: Sendable>(_ body: @Sendable (Upstream) async throws -> T) async throws -> T {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let state = UpstreamState()
        let application = Application(
            router: router(state),
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "catalog"),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: Logger(label: "catalog"))
        let group = ServiceGroup(services: [application], logger: Logger(label: "catalog"))
        // A catalog that never starts fails the test instead of hanging it.
        let startLimit = Task {
            try await Task.sleep(for: .seconds(30))
            continuation.finish()
        }
        defer { startLimit.cancel() }
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next(), port > 0 else {
                await group.triggerGracefulShutdown()
                throw UpstreamError.didNotStart
            }
            let result: Result<T, any Error>
            do {
                result = .success(try await body(Upstream(state: state, port: port)))
            } catch {
                result = .failure(error)
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return try result.get()
        }
    }

    private init(state: UpstreamState, port: Int) {
        self.state = state
        self.port = port
    }

    private static func router(_ state: UpstreamState) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.post("oauth/token") { request, _ -> Response in
            let expected = "Basic " + Data("gateway:s3cret".utf8).base64EncodedString()
            guard request.headers[.authorization] == expected else {
                return json(#"{"error": "bad client"}"#, .unauthorized)
            }
            let token = await state.grant()
            return json(#"{"access_token": "\#(token)", "token_type": "Bearer", "expires_in": 3600}"#, .ok)
        }
        router.get("v1/products/:id") { request, context -> Response in
            guard await state.accepts(request.headers[.authorization]) else {
                return json(#"{"error": "expired"}"#, .unauthorized)
            }
            let id = try context.parameters.require("id", as: Int.self)
            let tag = "\"p\(id)-v1\""
            await state.record(
                path: request.uri.path, conditional: request.headers[.ifNoneMatch] != nil,
                deadline: request.headers[.xDeadlineMs])
            if id == 99 { try await Task.sleep(for: .seconds(1)) }
            if id == 500 { return json(#"{"error": "database down"}"#, .internalServerError) }
            if id == 503 { return json(#"{"error": "overloaded"}"#, .serviceUnavailable) }
            guard let name = products[id] else { return json(#"{"error": "no such product"}"#, .notFound) }
            var headers: HTTPFields = [.contentType: "application/json", .cacheControl: "max-age=60", .eTag: tag]
            if request.headers[.ifNoneMatch] == tag {
                headers[.contentType] = nil
                return Response(status: .notModified, headers: headers)
            }
            return Response(
                status: .ok, headers: headers,
                body: .init(
                    byteBuffer: ByteBuffer(string: #"{"id": \#(id), "name": "\#(name)", "price_cents": \#(id * 1000)}"#)
                ))
        }
        router.get("v1/products") { request, _ -> Response in
            guard await state.accepts(request.headers[.authorization]) else {
                return json(#"{"error": "expired"}"#, .unauthorized)
            }
            let text = request.uri.queryParameters.get("q")?.lowercased() ?? ""
            let items = products.sorted { $0.key < $1.key }.filter { $0.value.lowercased().contains(text) }
                .map { #"{"id": \#($0.key), "name": "\#($0.value)", "price_cents": \#($0.key * 1000)}"# }
            return json(#"{"items": [\#(items.joined(separator: ", "))], "total": \#(items.count)}"#, .ok)
        }
        return router
    }

    private static func json(_ text: String, _ status: HTTPResponse.Status) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

enum UpstreamError: Error { case didNotStart }
