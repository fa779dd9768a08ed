import Courier
import Foundation

#if Peers
import AsyncHTTPClient
import NIOCore
#endif

/// The event stream nginx serves at `/events/stream.txt` (as `text/event-stream`): `count` small
/// events, each with an ID, a type and one JSON data line, as a model inference API sends tokens.
func eventStreamPayload(count: Int) -> Data {
    var text = "retry: 1000\n\n"
    for n in 1...count { text += "id: \(n)\nevent: token\ndata: {\"index\":\(n),\"text\":\"tok\(n % 97)\"}\n\n" }
    return Data(text.utf8)
}

let eventStreamEvents = 20_000

struct EventStreamResource: Resource {
    typealias Response = Data
    var base: String
    var endpoint: Endpoint { Endpoint(base, path: "/events/stream.txt") }
}

/// Server-sent events, in this process: the stream from nginx read as typed events by Courier's
/// `events()` (the HTML standard's parser: fields, IDs, retry), against the same bytes read as a
/// stream and split on blank lines by hand, what a caller without an event parser writes: on
/// async-http-client's streamed body (the reference) and on Courier's `stream`. Events/s and the
/// process's CPU microseconds per event, the three alternating within each run.
func eventStreams(nginx: Nginx, report: Report, quick: Bool, runs: Int) async throws {
    report.section("Server-sent events: \(eventStreamEvents) events per stream, median of \(runs)")
    let rounds = quick ? 3 : 10
    let coordinator = RequestCoordinator(transport: CurlTransport())
    let resource = EventStreamResource(base: nginx.base)

    /// Events per second and CPU µs per event over `rounds` streams read by `read`.
    func measure(_ read: () async throws -> Int) async throws -> (rate: Double, cpu: Double) {
        let cpuBefore = cpuSeconds()
        let start = ContinuousClock.now
        var events = 0
        for _ in 0..<rounds { events += try await read() }
        let seconds = (ContinuousClock.now - start).seconds
        guard events == rounds * eventStreamEvents else {
            throw BenchError("read \(events) events, expected \(rounds * eventStreamEvents)")
        }
        return (Double(events) / seconds, (cpuSeconds() - cpuBefore) * 1e6 / Double(events))
    }

    func courierEvents() async throws -> Int {
        var count = 0
        for try await event in coordinator.events(resource, reconnection: .never) where event.event == "token" {
            count += 1
        }
        return count
    }
    func courierSplit() async throws -> Int {
        var splitter = BlankLineCounter()
        for try await chunk in try await coordinator.stream(resource).body {
            chunk.withUnsafeBytes { splitter.count($0) }
        }
        return splitter.events - 1  // the leading retry block
    }
    #if Peers
    let client = HTTPClient(eventLoopGroupProvider: .singleton)
    func ahcSplit() async throws -> Int {
        let response = try await client.execute(
            HTTPClientRequest(url: nginx.base + "/events/stream.txt"), timeout: .seconds(30))
        var splitter = BlankLineCounter()
        for try await buffer in response.body { buffer.withUnsafeReadableBytes { splitter.count($0) } }
        return splitter.events - 1
    }
    #endif

    var samples: [String: [(rate: Double, cpu: Double)]] = [:]
    for run in 0..<runs {
        progress("events: run \(run + 1) of \(runs)")
        #if Peers
        samples["ahc", default: []].append(try await measure(ahcSplit))
        #endif
        samples["split", default: []].append(try await measure(courierSplit))
        samples["events", default: []].append(try await measure(courierEvents))
    }
    #if Peers
    try await client.shutdown()
    #endif
    await coordinator.shutdown()

    func add(_ key: String, _ subject: String, reference: Figure?) -> Figure? {
        guard let runs = samples[key] else { return nil }
        return report.add(
            "events", subject, unit: "ev/s", samples: runs.map(\.rate), reference: reference,
            notes: ["µs CPU/event": median(runs.map(\.cpu))])
    }
    let reference = add("ahc", "async-http-client, split by hand", reference: nil)
    let split = add("split", "Courier stream, split by hand", reference: reference)
    _ = add("events", "Courier events()", reference: reference ?? split)
}

/// Counts events the way a hand-written reader finds them: blank lines (two LFs in a row).
/// Both clients hand it raw buffers: iterating a `Data` byte by byte costs some 16 times as much.
struct BlankLineCounter {
    private(set) var events = 0
    private var previous: UInt8 = 0

    mutating func count(_ bytes: some Sequence<UInt8>) {
        for byte in bytes {
            if byte == 10, previous == 10 { events += 1 }
            previous = byte
        }
    }
}
