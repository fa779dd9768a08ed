import CourierServices
import CourierTesting
import Foundation
import Testing

/// A responder answers loads in place of the transport, and sees which resource asked.
@Suite("Resource responders")
struct ResourceResponderTests {
    struct User: Codable, Sendable, Equatable {
        var id: Int
        var name: String
    }

    struct UserService: Resource {
        typealias Response = User
        let id: Int
        var endpoint: Endpoint { Endpoint("https://api.example.com", path: "/users/\(id)") }
    }

    struct Avatar: Resource {
        typealias Response = Data
        var endpoint: Endpoint { Endpoint("https://api.example.com", path: "/avatar") }
    }

    /// Answers users from a table by the resource's own `id`; refuses everything else.
    struct Directory: ResourceResponder {
        let users: [Int: String]

        func response<R: Resource>(for resource: R, request: HTTPRequest) async throws -> TransportResponse {
            guard let user = resource as? UserService, let name = users[user.id] else {
                throw ServiceError(.mockMissing, "no answer for \(request.path ?? "")")
            }
            var head = HTTPResponse(status: .ok)
            head.headerFields[.contentType] = "application/json"
            return TransportResponse(head: head, body: Data(#"{"id":\#(user.id),"name":"\#(name)"}"#.utf8))
        }
    }

    @Test("loads are answered by the responder, by resource, and the transport sees none")
    func answersInPlaceOfTheTransport() async throws {
        let transport = MockTransport()
        var configuration = RequestCoordinator.Configuration()
        configuration.responder = Directory(users: [7: "Ada"])
        let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
        #expect(try await UserService(id: 7).load(using: coordinator) == User(id: 7, name: "Ada"))
        let missing = await serviceError { _ = try await UserService(id: 8).load(using: coordinator) }
        #expect(missing?.code == .mockMissing)
        let avatar = await serviceError { _ = try await Avatar().load(using: coordinator) }
        #expect(avatar?.code == .mockMissing)
        #expect(transport.requestCount == 0)
        await coordinator.shutdown()
    }
}
