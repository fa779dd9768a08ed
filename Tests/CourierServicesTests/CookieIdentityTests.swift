import CourierCaching
import CourierCore
import CourierTestServer
import CourierTesting
import Foundation
import Testing

@testable import CourierServices

/// Cookies and request identity: coalescing, the cache key, HAR recordings.
@Suite("Cookie identity")
struct CookieIdentityTests {
    func configuration(_ decorator: CookieDecorator) -> RequestCoordinator.Configuration {
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [decorator]
        return configuration
    }

    @Test("two partitions without cookies yet never share a coalesced response (nor its Set-Cookie)")
    func partitionsDoNotCoalesce() async throws {
        let transport = MockTransport()
        let served = LockedValue(0)
        transport.respondToAll { _, _ in
            let count = served.withLock { count in
                count += 1
                return count
            }
            return .json(#"{"cookies":{},"lines":[]}"#, headers: [.setCookie: "sid=\(count); Path=/"])
        }
        transport.holdResponses()
        let jars = CookieJar.Partitioned()
        let coordinator = RequestCoordinator(
            transport: transport, configuration: configuration(CookieDecorator(jars: jars)))
        let resource = CookiesResource(base: "http://api.test")
        async let alice = CookieJar.Partitioned.$current.withValue("alice") {
            try await resource.load(using: coordinator)
        }
        async let bob = CookieJar.Partitioned.$current.withValue("bob") { try await resource.load(using: coordinator) }
        await coordinator.waitForWaiters(2)
        transport.releaseResponses()
        _ = try await (alice, bob)
        #expect(transport.requestCount == 2)
        let sessions = ["alice", "bob"].compactMap { jars.existingJar(for: $0)?.allCookies.first?.value }
        #expect(Set(sessions) == ["1", "2"])
        await coordinator.shutdown()
    }

    @Test("one partition's identical loads still coalesce")
    func samePartitionCoalesces() async throws {
        let transport = MockTransport()
        transport.respondToAll { _, _ in .json(#"{"cookies":{},"lines":[]}"#) }
        transport.holdResponses()
        let jars = CookieJar.Partitioned()
        let coordinator = RequestCoordinator(
            transport: transport, configuration: configuration(CookieDecorator(jars: jars)))
        let resource = CookiesResource(base: "http://api.test")
        try await CookieJar.Partitioned.$current.withValue("alice") {
            async let first = resource.load(using: coordinator)
            async let second = resource.load(using: coordinator)
            await coordinator.waitForWaiters(2)
            transport.releaseResponses()
            _ = try await (first, second)
        }
        #expect(transport.requestCount == 1)
        await coordinator.shutdown()
    }

    @Test("Cookie partitions the cache: users with different cookies never share an entry")
    func cachePartitionedByCookie() async throws {
        #expect(RequestCoordinator.Configuration().credentialHeaders.contains(.cookie))
        var alice = HTTPRequest(method: .get, scheme: "http", authority: "a.test", path: "/")
        var bob = alice
        alice.headerFields[.cookie] = "u=alice"
        bob.headerFields[.cookie] = "u=bob"
        let names = RequestCoordinator.Configuration().credentialHeaders
        #expect(CacheKey(request: alice, credentialHeaders: names) != CacheKey(request: bob, credentialHeaders: names))

        let jars = CookieJar.Partitioned()
        for user in ["alice", "bob"] { jars.jar(for: user).insert(Cookie(name: "u", value: user, domain: "127.0.0.1")) }
        try await withCoordinator(configuration: configuration(CookieDecorator(jars: jars))) { server, coordinator in
            let resource = RawCachedResource(
                baseURL: server.baseURL, key: "cookie-partition", query: ["cc": "max-age=600"])
            for user in ["alice", "bob", "alice", "bob"] {
                _ = try await CookieJar.Partitioned.$current.withValue(user) {
                    try await resource.load(using: coordinator)
                }
            }
            let seen = server.requests(to: "/cache").map { $0.header("Cookie") }
            #expect(seen == ["u=alice", "u=bob"])
        }
    }

    @Test("HAR recordings redact the Cookie and Set-Cookie values the jar sends and receives")
    func harRedactsCookies() async throws {
        let server = try await TestServer.start()
        let transport = CurlTransport()
        let recorder = HARRecorder(wrapping: transport)
        let jar = CookieJar()
        let coordinator = RequestCoordinator(
            transport: recorder, configuration: configuration(CookieDecorator(jar: jar)))
        _ = try await CookiesResource.raw(server.baseURL, "sid=TOPSECRET; Path=/").load(using: coordinator)
        _ = try await CookiesResource(base: server.baseURL, path: "/cookies/other").load(using: coordinator)
        await coordinator.shutdown()
        await transport.shutdown()
        await server.stop()

        let entries = recorder.recorded
        let fields = entries.flatMap { $0.request.headers + $0.response.headers }
            .filter { ["cookie", "set-cookie"].contains($0.name.lowercased()) }
        #expect(fields.count == 2)
        #expect(fields.allSatisfy { $0.value == HARRecorder.redacted })
        #expect(jar.allCookies.map(\.value) == ["TOPSECRET"])
        #expect(!"\(jar)".contains("TOPSECRET"))
    }
}
