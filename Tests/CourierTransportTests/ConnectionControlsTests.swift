import CourierTestServer
import CourierTransport
import Foundation
import Testing

/// The transport's connection controls (address overrides, shuffled addresses, a local
/// binding, a maximum connection age) and the TLS revocation checks (a stapled OCSP response
/// required, a revocation list), each against loopback servers.
@Suite struct ConnectionControlsTests {
    /// Both ends of the connection a `/peer` request went over.
    struct Peer: Equatable {
        var server: String
        var client: String
        var clientAddress: Substring { client.split(separator: ":").first ?? "" }
    }

    func peer(_ transport: CurlTransport, _ authority: String) async throws -> Peer {
        let request = HTTPRequest(method: .get, scheme: "http", authority: authority, path: "/peer")
        let response = try await transport.send(request)
        #expect(response.head.status == .ok)
        let parts = String(decoding: response.body, as: UTF8.self).split(separator: " ").map(String.init)
        try #require(parts.count == 2)
        return Peer(server: parts[0], client: parts[1])
    }

    func makeTransport(_ change: (inout CurlTransport.Configuration) throws -> Void) rethrows -> CurlTransport {
        var configuration = CurlTransport.Configuration()
        configuration.loops = 1
        try change(&configuration)
        return CurlTransport(configuration: configuration)
    }

    // MARK: Address overrides

    /// A name no DNS knows reaches the override's address, and the request keeps the name.
    /// The first address (IPv6 loopback, where nothing listens) shows that IPv6 entries reach
    /// curl well-formed: the connection falls back to the next one.
    @Test func aMadeUpNameReachesItsOverride() async throws {
        let server = try await TestServer.start()
        let transport = try makeTransport {
            $0.addressOverrides = [
                try AddressOverride(host: "api.courier.test", port: server.port, addresses: ["127.0.0.1"]),
                try AddressOverride(host: "v6.courier.test", port: server.port, addresses: ["::1", "127.0.0.1"]),
            ]
        }
        let direct = try await peer(transport, "api.courier.test:\(server.port)")
        #expect(direct.server == "127.0.0.1:\(server.port)")
        let fallback = try await peer(transport, "v6.courier.test:\(server.port)")
        #expect(fallback.server == "127.0.0.1:\(server.port)")
        let hosts = server.requests(to: "/peer").compactMap { request in
            request.headers.first { $0.name.lowercased() == "host" }?.value
        }
        #expect(hosts == ["api.courier.test:\(server.port)", "v6.courier.test:\(server.port)"])
        await transport.shutdown()
        await server.stop()
    }

    /// curl skips a malformed entry without a word and asks DNS instead, so each part is
    /// checked when the override is made.
    @Test func malformedOverridesAreRefusedWhenMade() {
        let malformed: [(String, Int, [String])] = [
            ("", 80, ["127.0.0.1"]),
            ("a:b", 80, ["127.0.0.1"]),
            ("a b", 80, ["127.0.0.1"]),
            ("a,b", 80, ["127.0.0.1"]),
            ("api", 0, ["127.0.0.1"]),
            ("api", 65_536, ["127.0.0.1"]),
            ("api", 80, []),
            ("api", 80, ["300.1.1.1"]),
            ("api", 80, ["127.0.0.1", "localhost"]),
            ("api", 80, ["[::1]"]),
        ]
        for (host, port, addresses) in malformed {
            #expect(throws: ServiceError.self, "\(host):\(port) \(addresses)") {
                _ = try AddressOverride(host: host, port: port, addresses: addresses)
            }
            do {
                _ = try AddressOverride(host: host, port: port, addresses: addresses)
            } catch {
                #expect(error.code == .invalidRequest)
            }
        }
        #expect((try? AddressOverride(host: "api", port: 443, addresses: ["10.0.0.1", "fd00::1"])) != nil)
    }

    /// Two replicas on one port, at 127.0.0.1 and 127.0.0.2, behind one made-up name: without
    /// shuffling every transport connects to the first address; with it, fresh transports
    /// (each its own DNS cache) spread over both. 20 transports all landing on one replica by
    /// chance: 1 in 2^19.
    @Test func shuffledAddressesSpreadConnectionsOverReplicas() async throws {
        let (first, second) = try await Self.replicas()
        let override = try AddressOverride(
            host: "replicas.courier.test", port: first.port, addresses: ["127.0.0.1", "127.0.0.2"])
        func servers(shuffled: Bool) async throws -> Set<String> {
            var seen = Set<String>()
            for _ in 0..<20 {
                let transport = makeTransport {
                    $0.addressOverrides = [override]
                    $0.shufflesAddresses = shuffled
                }
                seen.insert(try await peer(transport, "replicas.courier.test:\(first.port)").server)
                await transport.shutdown()
            }
            return seen
        }
        #expect(try await servers(shuffled: false) == ["127.0.0.1:\(first.port)"])
        #expect(try await servers(shuffled: true) == ["127.0.0.1:\(first.port)", "127.0.0.2:\(first.port)"])
        await first.stop()
        await second.stop()
    }

    /// A server on 127.0.0.2 and one on 127.0.0.1 with the same port (tried a few times: the
    /// port may be taken on 127.0.0.1).
    static func replicas() async throws -> (TestServer, TestServer) {
        var attempt = 0
        while true {
            let second = try await TestServer.start(host: "127.0.0.2")
            do {
                return (try await TestServer.start(port: second.port), second)
            } catch {
                await second.stop()
                attempt += 1
                if attempt == 5 { throw error }
            }
        }
    }

    // MARK: Local binding

    @Test func connectionsLeaveFromTheBoundAddressOrInterface() async throws {
        let server = try await TestServer.start(host: "0.0.0.0")
        let target = "127.0.0.1:\(server.port)"
        let plain = makeTransport { _ in }
        #expect(try await peer(plain, target).clientAddress == "127.0.0.1")
        let bound = makeTransport { $0.localBinding = .address("127.0.0.2") }
        #expect(try await peer(bound, target).clientAddress == "127.0.0.2")
        let loopbackInterface = makeTransport { $0.localBinding = .interface("lo") }
        #expect(try await peer(loopbackInterface, target).clientAddress == "127.0.0.1")
        // An address this machine does not have (TEST-NET-1): the caller's configuration is at fault.
        let foreign = makeTransport { $0.localBinding = .address("192.0.2.1") }
        let error = await serviceError { _ = try await peer(foreign, target) }
        #expect(error?.code == .invalidRequest)
        for transport in [plain, bound, loopbackInterface, foreign] { await transport.shutdown() }
        await server.stop()
    }

    // MARK: Connection age

    /// With a 1 s age, a connection serves requests back to back but not one made 2 s later
    /// (curl counts whole seconds: a connection is reused while at most 1 s past its age);
    /// without an age, the same pause keeps the connection.
    @Test func connectionsOlderThanTheirAgeAreNotReused() async throws {
        let server = try await TestServer.start()
        let aged = makeTransport { $0.maximumConnectionAge = .seconds(1) }
        let unlimited = makeTransport { _ in }
        async let agedPorts = clientPorts(aged, server)
        async let unlimitedPorts = clientPorts(unlimited, server)
        let (withAge, withoutAge) = try await (agedPorts, unlimitedPorts)
        // curl reuses a connection while its age in whole seconds is at most the limit: under
        // 2 s from before the first request, the second must reuse it (a machine busy enough
        // to take longer proves nothing either way).
        if withAge.backToBack < .milliseconds(1_900) { #expect(withAge.ports.0 == withAge.ports.1) }
        #expect(withAge.ports.1 != withAge.ports.2)
        #expect(withoutAge.ports.0 == withoutAge.ports.1 && withoutAge.ports.1 == withoutAge.ports.2)
        await aged.shutdown()
        await unlimited.shutdown()
        await server.stop()
    }

    /// The client ends of two requests back to back and of one 2.2 s later, and how long the
    /// first two took.
    func clientPorts(
        _ transport: CurlTransport, _ server: TestServer
    ) async throws -> (ports: (String, String, String), backToBack: Duration) {
        let start = ContinuousClock.now
        let first = try await peer(transport, server.authority).client
        let second = try await peer(transport, server.authority).client
        let backToBack = ContinuousClock.now - start
        try await Task.sleep(for: .milliseconds(2_200))
        let third = try await peer(transport, server.authority).client
        return ((first, second, third), backToBack)
    }

    // MARK: Idle connections

    /// Four transfers held at once open four connections; when they end, a transport that
    /// keeps one idle connection closes three, and one that lets curl size its cache keeps more.
    @Test func idleConnectionsBeyondTheLimitAreClosed() async throws {
        let server = try await TestServer.start()
        let keepingOne = makeTransport { $0.maximumIdleConnections = 1 }
        let keepingAll = makeTransport { _ in }
        let origin = "http://\(server.authority)"
        for (transport, gate) in [(keepingOne, "idle-one"), (keepingAll, "idle-all")] {
            let held = (0..<4).map { _ in
                Task {
                    let request = HTTPRequest(
                        method: .get, scheme: "http", authority: server.authority, path: "/gate?name=\(gate)")
                    return try await transport.send(request).head.status
                }
            }
            #expect(await server.waitUntilHeld(gate, count: 4))
            server.openGate(gate)
            for task in held { #expect(try await task.value == .ok) }
        }
        #expect(server.snapshot.connectionsAccepted == 8)
        #expect(
            await keepingOne.poolSnapshot().connections[origin] == ConnectionPoolSnapshot.Connections(open: 1, inUse: 0)
        )
        #expect(await keepingAll.poolSnapshot().connections[origin]?.open ?? 0 > 1)
        await keepingOne.shutdown()
        await keepingAll.shutdown()
        await server.stop()
    }

    /// Past the per-host limit, transfers wait for a connection instead of opening more.
    @Test func transfersPastThePerHostLimitWaitForAConnection() async throws {
        let server = try await TestServer.start()
        let transport = makeTransport { $0.maximumConnectionsPerHost = 2 }
        let origin = "http://\(server.authority)"
        let held = (0..<4).map { _ in
            Task {
                let request = HTTPRequest(
                    method: .get, scheme: "http", authority: server.authority, path: "/gate?name=per-host")
                return try await transport.send(request).head.status
            }
        }
        #expect(await server.waitUntilHeld("per-host", count: 2))
        let start = ContinuousClock.now
        var snapshot = await transport.poolSnapshot()
        while snapshot.transfersWaiting != 2, ContinuousClock.now - start < .seconds(30) {
            try await Task.sleep(for: .milliseconds(5))
            snapshot = await transport.poolSnapshot()
        }
        #expect(snapshot.transfersWaiting == 2)
        #expect(snapshot.connections[origin] == .init(open: 2, inUse: 2))
        server.openGate("per-host")
        for task in held { #expect(try await task.value == .ok) }
        #expect(server.snapshot.connectionsAccepted == 2)
        await transport.shutdown()
        await server.stop()
    }

    // MARK: Revocation

    func hello(_ transport: CurlTransport, _ peer: TLSPeer, _ tls: TLSOptions) async throws -> String {
        var options = TransferOptions()
        options.tls = tls
        let request = HTTPRequest(method: .get, scheme: "https", authority: peer.authority, path: "/hello")
        return String(decoding: try await transport.send(request, body: nil, options: options).body, as: UTF8.self)
    }

    static func start(_ identity: ServerIdentity, stapling response: String? = nil) async throws -> TLSPeer {
        let peer = try await TLSPeer.start(identity: identity, stapledResponse: response)
        try peer.serve("hello", response: "HTTP/1.0 200 OK\r\n\r\nhello")
        return peer
    }

    @Test func aCertificateOnTheRevocationListIsRefused() async throws {
        let authority = try await RevocationAuthority.make()
        let revoked = try await Self.start(authority.revoked)
        let good = try await Self.start(authority.good)
        let transport = makeTransport { _ in }
        var trusting = TLSOptions()
        trusting.certificateAuthorityFile = authority.certificateFile
        var checking = trusting
        checking.certificateRevocationListFile = authority.revocationList
        #expect(try await hello(transport, revoked, trusting) == "hello")
        let error = await serviceError { _ = try await hello(transport, revoked, checking) }
        #expect(error?.code == .tlsFailed)
        #expect(try await hello(transport, good, checking) == "hello")
        var unreadable = trusting
        unreadable.certificateRevocationListFile = authority.directory + "/missing-crl.pem"
        let missing = await serviceError { _ = try await hello(transport, good, unreadable) }
        #expect(missing?.code == .tlsFailed)
        await transport.shutdown()
        revoked.stop()
        good.stop()
    }

    @Test func requiredStaplingNeedsAGoodStapledResponse() async throws {
        let authority = try await RevocationAuthority.make()
        let stapled = try await Self.start(authority.good, stapling: authority.ocspResponse(for: authority.good))
        let silent = try await Self.start(authority.good)
        let revoked = try await Self.start(
            authority.revoked, stapling: authority.ocspResponse(for: authority.revoked))
        let transport = makeTransport { _ in }
        var trusting = TLSOptions()
        trusting.certificateAuthorityFile = authority.certificateFile
        var requiring = trusting
        requiring.requiresOCSPStapling = true
        #expect(try await hello(transport, stapled, requiring) == "hello")
        #expect(try await hello(transport, silent, trusting) == "hello")
        let unstapled = await serviceError { _ = try await hello(transport, silent, requiring) }
        #expect(unstapled?.code == .tlsFailed)
        let revokedError = await serviceError { _ = try await hello(transport, revoked, requiring) }
        #expect(revokedError?.code == .tlsFailed)
        await transport.shutdown()
        for peer in [stapled, silent, revoked] { peer.stop() }
    }
}
