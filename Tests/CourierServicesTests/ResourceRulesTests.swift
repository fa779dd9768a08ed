import CourierServices
import CourierTesting
import Foundation
import Testing

/// The rules a resource or its backend adds to a load, and the errors each one ends in, as a
/// caller declares them.
@Suite("Resource rules")
struct ResourceRulesTests {
    /// An API that answers 200 with `{"error": …}` when it fails.
    struct EnvelopeAPI: Backend {
        struct Failed: Error {}
        func baseURL(in environment: BackendEnvironment) -> String? { "https://api.example.com" }
        func validate(_ response: HTTPResponse, body: Data) throws {
            if body.starts(with: Data(#"{"error""#.utf8)) { throw Failed() }
        }
    }

    struct Order: Resource {
        typealias Response = Data
        var id: Int
        var endpoint: Endpoint { Endpoint(EnvelopeAPI(), path: "/orders/\(id)") }
        /// Refuses an empty order with an error of its own, which reaches the caller as is.
        func validate(_ response: HTTPResponse, body: Data) throws {
            if body == Data("{}".utf8) { throw ServiceError(.decodingFailed, "an empty order") }
        }
    }

    func coordinator(_ mock: MockTransport, _ change: (inout RequestCoordinator.Configuration) -> Void = { _ in })
        -> RequestCoordinator
    {
        var configuration = RequestCoordinator.Configuration()
        configuration.cache = nil
        change(&configuration)
        return RequestCoordinator(transport: mock, configuration: configuration)
    }

    @Test("the backend's and the resource's validation turn accepted answers into errors")
    func validation() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/orders/1", with: .json(#"{"id":1}"#))
        mock.respond(to: .get, "/orders/2", with: .json(#"{"error":"no such order"}"#))
        mock.respond(to: .get, "/orders/3", with: .json("{}"))
        let coordinator = coordinator(mock)
        #expect(try await Order(id: 1).load(using: coordinator) == Data(#"{"id":1}"#.utf8))
        let backendRefused = await serviceError { _ = try await Order(id: 2).load(using: coordinator) }
        #expect(backendRefused?.code == .validationFailed)
        #expect(backendRefused?.underlying is EnvelopeAPI.Failed)
        let resourceRefused = await serviceError { _ = try await Order(id: 3).load(using: coordinator) }
        #expect(resourceRefused?.code == .decodingFailed)
        #expect(resourceRefused?.message == "an empty order")
        await coordinator.shutdown()
    }

    @Test("a JSON body that cannot be encoded fails the load before anything is sent")
    func encodingFailed() async throws {
        struct Reading: Encodable { var value: Double }
        struct Report: Resource {
            typealias Response = Data
            var endpoint: Endpoint { Endpoint("https://api.example.com", path: "/readings") }
            var method: HTTPRequest.Method { .post }
            var body: RequestBody? { get throws { try .json(Reading(value: .nan)) } }
        }
        let mock = MockTransport()
        mock.respondToAll { _, _ in .status(201) }
        let coordinator = coordinator(mock)
        let error = await serviceError { _ = try await Report().load(using: coordinator) }
        #expect(error?.code == .encodingFailed)
        #expect(mock.requestCount == 0)
        await coordinator.shutdown()
    }

    @Test("a resource that rejects duplicates fails a second identical load while the first is out")
    func rejectDuplicates() async throws {
        struct Payment: Resource {
            typealias Response = Data
            var endpoint: Endpoint { Endpoint("https://pay.example.com", path: "/charge/7") }
            var coalescing: Coalescing { .rejectDuplicates }
        }
        let mock = MockTransport()
        mock.respond(to: .get, "/charge/7", with: .json(#"{"charged":true}"#))
        mock.holdResponses()
        let coordinator = coordinator(mock)
        let first = Task { try await Payment().load(using: coordinator) }
        #expect(await mock.waitForRequests(1))
        let duplicate = await serviceError { _ = try await Payment().load(using: coordinator) }
        #expect(duplicate?.code == .redundantRequest)
        mock.releaseResponses()
        #expect(try await first.value == Data(#"{"charged":true}"#.utf8))
        #expect(mock.requestCount == 1)
        await coordinator.shutdown()
    }
}
