import CourierCaching
import CourierCore
import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Testing

/// What the test server's `/cookies` routes answer.
struct CookiesEcho: Decodable, Sendable, Equatable {
    var cookies: [String: String]
    var lines: [String]
}

/// `GET /cookies...` on the test server.
struct CookiesResource: Resource {
    typealias Response = CookiesEcho
    let base: String
    var path = "/cookies"
    var query: [(String, String)] = []
    var headers: HTTPFields = [:]
    var endpoint: Endpoint { Endpoint(base, path: path, query: query.map { URLQueryItem(name: $0.0, value: $0.1) }) }

    static func set(_ base: String, _ pairs: [(String, String)]) -> CookiesResource {
        CookiesResource(base: base, path: "/cookies/set", query: pairs)
    }

    static func raw(_ base: String, _ fields: String...) -> CookiesResource {
        CookiesResource(base: base, path: "/cookies/raw", query: fields.map { ("h", $0) })
    }
}

/// The cookie decorator against the loopback server: a coordinator has cookies only when given one.
@Suite("Cookie decorator")
struct CookieDecoratorTests {
    let clock = ManualWallClock()

    func configuration(_ decorator: CookieDecorator) -> RequestCoordinator.Configuration {
        var configuration = RequestCoordinator.Configuration()
        configuration.decorators = [decorator]
        return configuration
    }

    @Test("without a cookie decorator nothing is kept: /cookies/set then /cookies is empty")
    func offByDefault() async throws {
        try await withCoordinator { server, coordinator in
            _ = try await CookiesResource.set(server.baseURL, [("a", "1")]).load(using: coordinator)
            #expect(try await CookiesResource(base: server.baseURL).load(using: coordinator).cookies.isEmpty)
        }
    }

    @Test("cookies set by the server come back, in one Cookie line")
    func setThenRead() async throws {
        let jar = CookieJar()
        try await withCoordinator(configuration: configuration(CookieDecorator(jar: jar))) { server, coordinator in
            _ = try await CookiesResource.set(server.baseURL, [("a", "1"), ("b", "2")]).load(using: coordinator)
            let echo = try await CookiesResource(base: server.baseURL).load(using: coordinator)
            #expect(echo.cookies == ["a": "1", "b": "2"])
            #expect(echo.lines.count == 1)
        }
        #expect(jar.count == 2)
    }

    @Test("a Cookie field the caller set is kept, and wins over the jar's cookie of that name")
    func callerCookieKept() async throws {
        let jar = CookieJar()
        try await withCoordinator(configuration: configuration(CookieDecorator(jar: jar))) { server, coordinator in
            _ = try await CookiesResource.set(server.baseURL, [("a", "jar"), ("b", "jar")]).load(using: coordinator)
            var resource = CookiesResource(base: server.baseURL)
            resource.headers[.cookie] = "mine=1; a=caller"
            let echo = try await resource.load(using: coordinator)
            #expect(echo.cookies == ["mine": "1", "a": "caller", "b": "jar"])
            #expect(echo.lines == ["mine=1; a=caller; b=jar"])
        }
    }

    @Test("two partitions never see each other's cookies; no partition, no cookies")
    func partitionsIsolated() async throws {
        let jars = CookieJar.Partitioned()
        try await withCoordinator(configuration: configuration(CookieDecorator(jars: jars))) { server, coordinator in
            let base = server.baseURL
            for user in ["alice", "bob"] {
                try await CookieJar.Partitioned.$current.withValue(user) {
                    _ = try await CookiesResource.set(base, [("session", user)]).load(using: coordinator)
                }
            }
            for user in ["alice", "bob"] {
                let echo = try await CookieJar.Partitioned.$current.withValue(user) {
                    try await CookiesResource(base: base).load(using: coordinator)
                }
                #expect(echo.cookies == ["session": user])
            }
            _ = try await CookiesResource.set(base, [("anonymous", "1")]).load(using: coordinator)
            #expect(try await CookiesResource(base: base).load(using: coordinator).cookies.isEmpty)
        }
        #expect(jars.count == 2)
        #expect(jars.existingJar(for: "alice")?.allCookies.map(\.value) == ["alice"])
    }

    @Test("a partition closure picks the jar too")
    func partitionClosure() async throws {
        let jars = CookieJar.Partitioned()
        let user = LockedValue<String?>("carol")
        let decorator = CookieDecorator(jars: jars, partition: { user.withLock { $0 } })
        try await withCoordinator(configuration: configuration(decorator)) { server, coordinator in
            _ = try await CookiesResource.set(server.baseURL, [("who", "carol")]).load(using: coordinator)
            user.withLock { $0 = "dave" }
            #expect(try await CookiesResource(base: server.baseURL).load(using: coordinator).cookies.isEmpty)
        }
        #expect(jars.existingJar(for: "carol")?.count == 1)
        #expect("\(decorator)" == "CookieDecorator(partitioned)")
    }

    @Test("a Secure cookie is not sent over http, and an http response cannot set one")
    func secureNotOverHTTP() async throws {
        let jar = CookieJar()
        jar.insert(Cookie(name: "secure", value: "1", domain: "127.0.0.1", isSecure: true))
        jar.insert(Cookie(name: "plain", value: "1", domain: "127.0.0.1"))
        try await withCoordinator(configuration: configuration(CookieDecorator(jar: jar))) { server, coordinator in
            _ = try await CookiesResource.raw(server.baseURL, "other=1; Secure").load(using: coordinator)
            let echo = try await CookiesResource(base: server.baseURL).load(using: coordinator)
            #expect(echo.cookies == ["plain": "1"])
        }
        #expect(Set(jar.allCookies.map(\.name)) == ["secure", "plain"])
    }

    @Test("a cookie expires on the jar's clock, with no sleep")
    func expiryOnInjectedClock() async throws {
        let clock = clock
        let jar = CookieJar(now: { clock.now })
        try await withCoordinator(configuration: configuration(CookieDecorator(jar: jar))) { server, coordinator in
            _ = try await CookiesResource.raw(server.baseURL, "short=1; Max-Age=60", "long=1; Max-Age=3600")
                .load(using: coordinator)
            #expect(try await CookiesResource(base: server.baseURL).load(using: coordinator).cookies.count == 2)
            clock.advance(by: 61)
            #expect(try await CookiesResource(base: server.baseURL).load(using: coordinator).cookies == ["long": "1"])
            _ = try await CookiesResource.raw(server.baseURL, "long=x; Max-Age=0").load(using: coordinator)
        }
        #expect(jar.count == 0)
    }

    @Test("Set-Cookie of a response reached through a redirect is not stored (its URL is unknown)")
    func redirectedResponseIgnored() async throws {
        let jar = CookieJar()
        try await withCoordinator(configuration: configuration(CookieDecorator(jar: jar))) { server, coordinator in
            let hop = CookiesResource(base: server.baseURL, path: "/redirect-to", query: [("to", "/cookies/set?r=1")])
            _ = try await hop.load(using: coordinator)
        }
        #expect(jar.count == 0)
    }
}
