#if PostgreSQL
import CourierPostgresCache
import CourierServices
import CourierTestServer
import Foundation
import Testing

/// A `courier-pg-fleet-member` child process: one instance of a fleet, with its own coordinator
/// and PostgreSQL pool, loading one URL of the test server once.
final class FleetMember {
    let process: ChildProcess
    let output: OutputPipe
    /// Every line read so far (for failure messages).
    private(set) var transcript: [String] = []

    init(cluster: PostgresCluster, server: TestServer, path: String, query: String, mode: [String]) throws {
        let executable = CommandLine.testProductsDirectory + "/courier-pg-fleet-member"
        output = OutputPipe()
        process = try ChildProcess.spawn(
            executable, ["\(cluster.port)", server.baseURL, path, query] + mode, standardOutput: output.writeEnd)
        output.closeWriteEnd()
    }

    /// Reads lines until one starts with `prefix` (returned, without its newline) or the output
    /// ends (nil).
    func line(startingWith prefix: String) async -> String? {
        while true {
            let bytes = await output.line()
            guard !bytes.isEmpty else { return nil }
            let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .newlines)
            transcript.append(text)
            if text.hasPrefix(prefix) { return text }
            if text.hasPrefix("error") { return text }
        }
    }

    /// Waits for the final line (`done <source> <body>`) and the exit.
    func finish() async -> (line: String?, status: Int32) {
        let line = await line(startingWith: "done")
        return (line, await process.exit())
    }
}

@Suite("PostgreSQL cache tier across processes", postgresAvailable)
struct PostgresFleetTests {
    @Test("an entry one process stored is served to another from the shared tier")
    func twoProcessesShareEntries() async throws {
        try await withPostgresStore { cluster, store in
            try await store.prepare()
            try await withTestServer { server in
                let first = try FleetMember(
                    cluster: cluster, server: server, path: "/cache", query: "key=shared", mode: ["plain"])
                let one = await first.finish()
                #expect(one.status == 0)
                #expect(one.line?.hasPrefix("done network ") == true, "\(one.line ?? "no output")")
                let second = try FleetMember(
                    cluster: cluster, server: server, path: "/cache", query: "key=shared", mode: ["plain"])
                let two = await second.finish()
                #expect(two.status == 0)
                #expect(two.line?.hasPrefix("done shared ") == true, "\(two.line ?? "no output")")
                #expect(one.line?.dropFirst("done network ".count) == two.line?.dropFirst("done shared ".count))
                #expect(server.cacheCounts("shared").requests == 1)
            }
        }
    }

    @Test("a 429 with Retry-After to one process pauses its host for two others, which send it nothing")
    func hostPausesAcrossProcesses() async throws {
        try await withPostgresStore { cluster, store in
            try await store.prepare()
            try await withTestServer { server in
                let first = try FleetMember(
                    cluster: cluster, server: server, path: "/quota", query: "key=fleet", mode: ["pause", "1", "0"])
                #expect(await first.line(startingWith: "result") == "result unacceptableStatus 429")
                let one = await first.finish()
                #expect(one.status == 0, "\(first.transcript)")
                #expect(first.transcript.contains("event hostPaused"))
                #expect(try await cluster.psql("SELECT count(*) FROM courier_host_pauses") == "1")
                // Started after the pause was shared: each reads it before its loads.
                let others = try (0..<2).map { _ in
                    try FleetMember(
                        cluster: cluster, server: server, path: "/quota", query: "key=fleet",
                        mode: ["pause", "3", "5000"])
                }
                for other in others {
                    for _ in 0..<3 {
                        let result = await other.line(startingWith: "result")
                        #expect(result == "result hostPaused -", "\(other.transcript)")
                    }
                    #expect(await other.finish().status == 0)
                }
                #expect(server.requests(to: "/quota").count == 1, "only the first process asked the host")
            }
        }
    }

    @Test("three processes load one slow cold URL at once: one origin request, the others get the shared entry")
    func collapsingAcrossProcesses() async throws {
        try await withPostgresStore { cluster, store in
            try await store.prepare()
            try await withTestServer { server in
                let mode = ["collapse", "60", "60"]
                let holder = try FleetMember(
                    cluster: cluster, server: server, path: "/gate", query: "name=cold", mode: mode)
                #expect(await server.waitUntilHeld("cold", count: 1))  // the lease holder is at the origin
                let waiters = try (0..<2).map { _ in
                    try FleetMember(cluster: cluster, server: server, path: "/gate", query: "name=cold", mode: mode)
                }
                for waiter in waiters {  // each missed every tier and is asking the fleet
                    #expect(await waiter.line(startingWith: "event miss") == "event miss")
                }
                server.openGate("cold")
                let held = await holder.finish()
                #expect(
                    held.status == 0 && held.line?.hasPrefix("done network ") == true, "\(held.line ?? "no output")")
                for waiter in waiters {
                    let result = await waiter.finish()
                    #expect(
                        result.status == 0 && result.line?.hasPrefix("done shared ") == true,
                        "\(waiter.transcript)")
                }
                #expect(server.gateCounts("cold").served == 1)
            }
        }
    }

    @Test("the lease holder killed mid-fetch: the waiting processes still complete")
    func holderKilled() async throws {
        try await withPostgresStore { cluster, store in
            try await store.prepare()
            try await withTestServer { server in
                let mode = ["collapse", "30", "1"]  // a 1 s lease: it falls free soon after its holder dies
                let holder = try FleetMember(
                    cluster: cluster, server: server, path: "/gate", query: "name=orphan", mode: mode)
                #expect(await server.waitUntilHeld("orphan", count: 1))
                let waiters = try (0..<2).map { _ in
                    try FleetMember(cluster: cluster, server: server, path: "/gate", query: "name=orphan", mode: mode)
                }
                for waiter in waiters {
                    #expect(await waiter.line(startingWith: "event miss") == "event miss")
                }
                kill(holder.process.pid, SIGKILL)
                #expect(await holder.process.exit() == 128 + SIGKILL)
                server.openGate("orphan")
                var sources: [String] = []
                for waiter in waiters {
                    let result = await waiter.finish()
                    #expect(result.status == 0, "\(waiter.transcript)")
                    if let line = result.line { sources.append(String(line.split(separator: " ")[1])) }
                }
                // One waiter took the lease that fell free and fetched; the other got its entry
                // (or, had its wait run out, fetched itself).
                #expect(sources.count == 2 && sources.contains("network"))
                #expect(server.gateCounts("orphan").served <= 3)
            }
        }
    }
}
#endif
