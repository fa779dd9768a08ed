import Courier
import Foundation

/// `--interleaved URL ROUNDS BLOCK LABEL...`: requests/s and CPU per request of several ways to
/// fetch `URL`, one at a time (c=1), in one process over one `CurlTransport`, each round running
/// BLOCK requests of every variant in turn (the order rotates from round to round).
///
/// Why: this machine's wall-clock figures move by 30% from one minute to the next, so variants
/// measured in child processes one after another (as the end-to-end scenarios do, three runs of
/// each client back to back) can differ by more than their code does. Alternating small blocks
/// in one process, sharing one loop thread and one connection, exposes every variant to the same
/// moments of the machine; each line gives its ratio to the first label, over all rounds and as
/// the median (and quartiles) of the per-round ratios.
///
/// Labels: `tuned` (coalescing and retries off, one URL, as `courier`), `defaults` (the default
/// configuration over distinct URLs, as `courier-defaults`), and the defaults with one thing
/// changed: `defaults-same` (one URL), `no-coalescing`, `no-retries`, `no-host-queue`
/// (`maximumLoadsPerHost` 0), `no-cache` (`cache` nil); `tuned-distinct` (tuned over distinct
/// URLs); `send` and `send-distinct` (`CurlTransport.send`). A `@loop` suffix runs each request
/// of that variant preferring the transport's loop thread as its task executor.
func runInterleaved(url: String, rounds: Int, block: Int, labels: [String]) async throws {
    let transport = CurlTransport()
    let parts = BytesResource(url: url)
    let authority = parts.base.replacingOccurrences(of: "http://", with: "")
    func coordinator(_ change: (inout RequestCoordinator.Configuration) -> Void) -> RequestCoordinator {
        var configuration = RequestCoordinator.Configuration()
        change(&configuration)
        return RequestCoordinator(transport: transport, configuration: configuration)
    }
    func distinct(_ coordinator: RequestCoordinator) -> @Sendable (Int) async throws -> Int {
        { index in
            try await DistinctBytesResource(base: parts.base, path: parts.path, index: index).load(using: coordinator)
                .count
        }
    }
    var variants: [(label: String, run: @Sendable (Int) async throws -> Int)] = []
    for label in labels {
        let onLoop = label.hasSuffix("@loop")
        var run: @Sendable (Int) async throws -> Int
        switch onLoop ? String(label.dropLast("@loop".count)) : label {
        case "tuned":
            let tuned = coordinator {
                $0.coalescesDuplicateLoads = false
                $0.retryPolicy = .none
            }
            run = { _ in try await parts.load(using: tuned).count }
        case "tuned-distinct":
            run = distinct(
                coordinator {
                    $0.coalescesDuplicateLoads = false
                    $0.retryPolicy = .none
                })
        case "defaults": run = distinct(coordinator { _ in })
        case "defaults-same":
            let defaults = coordinator { _ in }
            run = { _ in try await OneURLResource(base: parts.base, path: parts.path).load(using: defaults).count }
        case "no-coalescing": run = distinct(coordinator { $0.coalescesDuplicateLoads = false })
        case "no-retries": run = distinct(coordinator { $0.retryPolicy = .none })
        case "no-host-queue": run = distinct(coordinator { $0.maximumLoadsPerHost = 0 })
        case "no-cache": run = distinct(coordinator { $0.cache = nil })
        case "send":
            let request = HTTPRequest(method: .get, scheme: "http", authority: authority, path: parts.path)
            run = { _ in try await transport.send(request).body.count }
        case "send-distinct":
            run = { index in
                let request = HTTPRequest(
                    method: .get, scheme: "http", authority: authority, path: "\(parts.path)?i=\(index)")
                return try await transport.send(request).body.count
            }
        default: throw BenchError("--interleaved: unknown label \(label)")
        }
        if onLoop {
            let inner = run
            let executor = transport.taskExecutor
            run = { index in try await withTaskExecutorPreference(executor) { try await inner(index) } }
        }
        variants.append((label, run))
    }
    guard !variants.isEmpty, rounds > 0, block > 0 else { throw BenchError("--interleaved: nothing to run") }
    for variant in variants { for index in 0..<100 { _ = try await variant.run(index) } }  // warm-up
    var seconds = [[Double]](repeating: [], count: variants.count)
    var cpu = [Double](repeating: 0, count: variants.count)
    var index = 0
    for round in 0..<rounds {
        for step in variants.indices {
            let k = (step + round) % variants.count
            let cpuBefore = cpuSeconds()
            let start = ContinuousClock.now
            for _ in 0..<block {
                index += 1
                _ = try await variants[k].run(index)
            }
            seconds[k].append((ContinuousClock.now - start).seconds)
            cpu[k] += cpuSeconds() - cpuBefore
        }
    }
    await transport.shutdown()
    let requests = Double(rounds * block)
    let width = variants.map(\.label.count).max()!
    func fixed(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }
    for k in variants.indices {
        let total = seconds[k].reduce(0, +)
        let ratios = zip(seconds[0], seconds[k]).map { $0 / $1 }.sorted()
        let label = variants[k].label.padding(toLength: width, withPad: " ", startingAt: 0)
        print(
            "\(label)  \(fixed(requests / total, 0)) req/s  \(fixed(cpu[k] / requests * 1e6, 1)) µs CPU/req"
                + "  vs \(variants[0].label): req/s \(fixed(seconds[0].reduce(0, +) / total, 3))"
                + " (per round: median \(fixed(ratios[ratios.count / 2], 3)), quartiles \(fixed(ratios[ratios.count / 4], 2))"
                + "-\(fixed(ratios[3 * ratios.count / 4], 2))), CPU \(fixed(cpu[k] / cpu[0], 3))")
    }
}

/// A default resource with one URL (``DistinctBytesResource`` without its query item).
struct OneURLResource: Resource {
    typealias Response = Data
    let base: String
    let path: String

    var endpoint: Endpoint { Endpoint(base, path: path) }
}
