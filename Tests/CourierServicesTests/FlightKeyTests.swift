import CourierServices
import CourierTesting
import Foundation
import Testing

@testable import CourierServices

@Suite("Flight key")
struct FlightKeyTests {
    static let ignored = RequestCoordinator.Configuration().headersIgnoredForCoalescing

    func request(path: String = "/items?page=1", fields: [(String, String)] = []) -> HTTPRequest {
        var request = HTTPRequest(method: .get, scheme: "https", authority: "api.test", path: path)
        for (name, value) in fields {
            request.headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value))
        }
        return request
    }

    func key(
        path: String = "/items?page=1", fields: [(String, String)] = [], body: RequestBody? = nil, tag: String? = nil
    ) -> FlightKey {
        FlightKey(request(path: path, fields: fields), body: body, ignoring: Self.ignored, tag: tag)!
    }

    @Test("identical requests have equal keys and equal hashes")
    func identical() {
        let fields = [("Authorization", "Bearer a"), ("Accept", "application/json")]
        #expect(key(fields: fields, body: .string("x")) == key(fields: fields, body: .string("x")))
        #expect(key(fields: fields).hashValue == key(fields: fields).hashValue)
        #expect(key(fields: fields + [("traceparent", "00-1")]) == key(fields: fields + [("traceparent", "00-2")]))
        #expect(key(fields: fields + [("X-Request-ID", "1")]) == key(fields: fields))
    }

    @Test("a header value, credentials, a query item, the body, its type, the tag or the method tell keys apart")
    func differences() {
        let base = key(fields: [("Authorization", "Bearer a"), ("Accept-Language", "en")], body: .string("1"))
        #expect(base != key(fields: [("Authorization", "Bearer a"), ("Accept-Language", "fr")], body: .string("1")))
        #expect(base != key(fields: [("Authorization", "Bearer b"), ("Accept-Language", "en")], body: .string("1")))
        #expect(base != key(fields: [("Accept-Language", "en")], body: .string("1")))
        #expect(base != key(fields: [("Authorization", "Bearer a"), ("Accept-Language", "en")], body: .string("2")))
        #expect(base != key(fields: [("Authorization", "Bearer a"), ("Accept-Language", "en")]))
        #expect(
            base
                != key(
                    fields: [("Authorization", "Bearer a"), ("Accept-Language", "en")],
                    body: .string("1", contentType: "application/json")))
        #expect(
            base
                != key(
                    path: "/items?page=2", fields: [("Authorization", "Bearer a"), ("Accept-Language", "en")],
                    body: .string("1")))
        #expect(
            base
                != key(
                    fields: [("Authorization", "Bearer a"), ("Accept-Language", "en")], body: .string("1"), tag: "T"))
        var post = request(fields: [("Authorization", "Bearer a"), ("Accept-Language", "en")])
        post.method = .post
        #expect(base != FlightKey(post, body: .string("1"), ignoring: Self.ignored))
        #expect(key(fields: [("A", "1"), ("A", "2")]) != key(fields: [("A", "1")]))
    }

    @Test("a forced hash collision never merges two different requests")
    func collision() {
        var alice = key(fields: [("Authorization", "Bearer alice")])
        var bob = key(fields: [("Authorization", "Bearer bob")])
        alice.storedHash = 42
        bob.storedHash = 42
        #expect(alice.hashValue == bob.hashValue)
        #expect(alice != bob)
        let table: [FlightKey: String] = [alice: "alice", bob: "bob"]
        #expect(table.count == 2)
        #expect(table[alice] == "alice" && table[bob] == "bob")
        var twin = key(fields: [("Authorization", "Bearer alice")])
        twin.storedHash = 42
        #expect(table[twin] == "alice")
    }

    @Test("the key's hash keeps parts apart and reads every byte of a long value")
    func keyHasher() {
        func hash(_ parts: [String?]) -> UInt64 {
            var hasher = KeyHasher()
            for part in parts { hasher.combine(part) }
            return hasher.value
        }
        #expect(hash(["ab", "c"]) == hash(["ab", "c"]))
        // Where one part ends and the next begins is part of the hash.
        #expect(hash(["ab", "c"]) != hash(["a", "bc"]))
        #expect(hash(["", "x"]) != hash(["x", ""]))
        #expect(hash([nil, "x"]) != hash(["", "x"]))
        // A difference past the first words, in the tail, or in one byte of a long value.
        let long = String(repeating: "0123456789abcdef", count: 8)
        #expect(hash([long + "x"]) != hash([long + "y"]))
        #expect(hash([long]) != hash([String(long.dropLast()) + "g"]))
        #expect(hash(["aaaaaaaab"]) != hash(["aaaaaaaac"]))
        // Through a key: distinct URLs and header values change it.
        #expect(key(path: "/items?i=1").storedHash != key(path: "/items?i=2").storedHash)
        #expect(key(fields: [("Accept", "a")]).storedHash != key(fields: [("Accept", "b")]).storedHash)
    }
    @Test("a body streamed from a file has no key")
    func fileBody() {
        #expect(FlightKey(request(), body: .file(atPath: "/tmp/none"), ignoring: []) == nil)
    }

    struct Item: Resource {
        typealias Response = Gate
        var page = "1"
        var language = "en"
        var token = "a"
        var payload: String?
        var method: HTTPRequest.Method { payload == nil ? .get : .post }
        var coalescing: Coalescing { .always }
        var endpoint: Endpoint { Endpoint("http://mock.test", path: "/items", query: ["page": page]) }
        var headers: HTTPFields { [.authorization: "Bearer \(token)", .acceptLanguage: language] }
        var body: RequestBody? { payload.map { .string($0) } }
    }

    @Test("through a coordinator, only identical loads share a transfer")
    func coordinatorSharesOnlyIdentical() async throws {
        let mock = MockTransport()
        mock.respondToAll { _, _ in .json(#"{"gate":"item","served":1}"#) }
        mock.holdResponses()
        let coordinator = RequestCoordinator(transport: mock)
        let loads = [
            Item(), Item(), Item(page: "2"), Item(language: "fr"), Item(token: "b"), Item(payload: "x"),
            Item(payload: "y"), Item(payload: "x"),
        ]
        let results = try await withThrowingTaskGroup(of: Loaded<Gate>.self) { group in
            for load in loads { group.addTask { try await load.loadResponse(using: coordinator) } }
            await coordinator.waitForWaiters(loads.count)
            mock.releaseResponses()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        // Two pairs share (Item() twice, Item(payload: "x") twice): 8 loads, 6 transfers.
        #expect(mock.requestCount == 6)
        #expect(results.filter(\.wasCoalesced).count == 2)
        await coordinator.shutdown()
    }
}
