// A child process for the PostgreSQL tier's fleet tests: one "instance" of a server fleet, with a
// coordinator of its own (memory in front of a PostgresCacheStore), loading one URL once.
//
//     courier-pg-fleet-member <postgres port> <base URL> <path> <query name>=<value> plain
//     courier-pg-fleet-member <postgres port> <base URL> <path> <query name>=<value> collapse <wait s> <lease s>
//     courier-pg-fleet-member <postgres port> <base URL> <path> <query name>=<value> pause <loads> <wait ms>
//
// `pause` waits until the store holds a host pause and `wait ms` more (when `wait` is not 0), so
// that its coordinator has read it, then loads the URL `loads` times without retries, printing
// "result ok" or "result <error code> <status>" for each.
//
// Prints "event <name>" for each cache event as it happens (so a test knows when it missed and
// asks the fleet), then "done <source> <body>" and exits 0; "error <description>" and exits 1.
import Foundation

#if PostgreSQL
import CourierPostgresCache
import CourierServices
import PostgresNIO

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count >= 6, let port = Int(arguments[1]), let equals = arguments[4].firstIndex(of: "=") else {
    say(
        "error usage: courier-pg-fleet-member <postgres port> <base URL> <path> <name>=<value> plain | collapse <wait s> <lease s>"
    )
    exit(2)
}
let query = [URLQueryItem(name: String(arguments[4][..<equals]), value: String(arguments[4][equals...].dropFirst()))]
var policy = CachePolicy.cacheElseNetwork(maxAge: .seconds(600), tiers: [.memory, .shared])
if arguments[5] == "collapse", arguments.count == 8, let wait = Double(arguments[6]), let lease = Double(arguments[7]) {
    policy = policy.collapsingAcrossFleet(wait: .seconds(wait), lease: .seconds(lease))
}

struct FleetLoad: Resource {
    typealias Response = Data
    var endpoint: Endpoint
    var cachePolicy: CachePolicy
    var retryPolicy: RetryPolicy?
}

var postgres = PostgresClient.Configuration(
    host: "127.0.0.1", port: port, username: "postgres", password: nil, database: "postgres", tls: .disable)
postgres.options.maximumConnections = 2
var storeSettings = PostgresCacheStore.Configuration()
// A busy test machine (the whole suite at once); the outage test checks the default limit.
storeSettings.timeout = .seconds(20)
let store = PostgresCacheStore(postgres: postgres, configuration: storeSettings)
let pool = Task { await store.run() }
let transport = CurlTransport()
var settings = RequestCoordinator.Configuration()
settings.cache = TieredCache(stores: [store])
let coordinator = RequestCoordinator(transport: transport, configuration: settings)
let events = coordinator.events()
let printer = Task {
    for await event in events {
        if let cache = event.kind.cacheEvent { say("event \(cache.name)" + (cache.reason.map { " \($0)" } ?? "")) }
        if event.kind.name == .hostPaused { say("event hostPaused") }
    }
}
let status: Int32
if arguments[5] == "pause", arguments.count == 8, let loads = Int(arguments[6]), let wait = Int(arguments[7]) {
    if wait > 0 {
        // Until the fleet's store holds a pause, then `wait` more: the coordinator reads the
        // pauses every second.
        let started = ContinuousClock.now
        while (try? await store.hostPauses())?.isEmpty != false, ContinuousClock.now - started < .seconds(60) {
            try? await Task.sleep(for: .milliseconds(50))
        }
        try? await Task.sleep(for: .milliseconds(wait))
    }
    let load = FleetLoad(
        endpoint: Endpoint(arguments[2], path: arguments[3], query: query), cachePolicy: .networkOnly,
        retryPolicy: RetryPolicy.none)
    for _ in 0..<loads {
        do {
            _ = try await load.load(using: coordinator)
            say("result ok")
        } catch {
            say("result \(error.code) \(error.status.map { "\($0.code)" } ?? "-")")
        }
    }
    await coordinator.shutdown()
    await printer.value
    say("done pause")
    status = 0
} else {
    do {
        let loaded = try await FleetLoad(
            endpoint: Endpoint(arguments[2], path: arguments[3], query: query), cachePolicy: policy
        ).loadResponse(using: coordinator)
        await coordinator.shutdown()
        await printer.value
        say("done \(loaded.source) \(String(decoding: loaded.value, as: UTF8.self))")
        status = 0
    } catch {
        await coordinator.shutdown()
        await printer.value
        say("error \(error)")
        status = 1
    }
}
await transport.shutdown()
pool.cancel()
await pool.value
exit(status)
#else
FileHandle.standardError.write(Data("courier-pg-fleet-member needs the PostgreSQL trait\n".utf8))
exit(2)
#endif
