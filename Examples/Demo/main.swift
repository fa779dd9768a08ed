// courier-demo: the README's main job until `courier-bench` lands. It starts the loopback
// test server in-process, then measures Courier's CurlTransport against it: requests/s at
// concurrency 1 and 64 (small JSON, 100 KB gzip), the coordinator's overhead and coalescing,
// the caches against a dictionary and plain file I/O, and a 50 MB download's peak memory.
import Courier
import CourierTestServer
import Foundation

func peakRSSKilobytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
}

func measure(
    _ name: String, transport: CurlTransport, server: TestServer, path: String, concurrency: Int, requests: Int
) async throws {
    let request = HTTPRequest(method: .get, scheme: "http", authority: server.authority, path: path)
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Int.self) { group in
        for worker in 0..<concurrency {
            group.addTask {
                var bytes = 0
                for _ in stride(from: worker, to: requests, by: concurrency) {
                    bytes += try await transport.send(request).body.count
                }
                return bytes
            }
        }
        for try await _ in group {}
    }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let rate = Double(requests) / seconds
    print(
        "\(name.padding(toLength: 34, withPad: " ", startingAt: 0)) c=\(String(concurrency).padding(toLength: 3, withPad: " ", startingAt: 0))  \(String(format: "%9.0f", rate)) req/s"
    )
}

let quick = CommandLine.arguments.contains("--quick")
/// `--filter transport|services|cache|download` runs one group of figures.
let filter = CommandLine.arguments.firstIndex(of: "--filter").flatMap {
    CommandLine.arguments.indices.contains($0 + 1) ? CommandLine.arguments[$0 + 1] : nil
}
func runs(_ group: String) -> Bool { filter == nil || filter == group }
print("Courier demo — \(CurlFeatures.current)")
let server = try await TestServer.start(threads: 1)
let transport = CurlTransport()
let count = quick ? 2_000 : 20_000

if runs("transport") {
    try await measure(
        "small JSON (identity)", transport: transport, server: server, path: "/json", concurrency: 1, requests: count)
    try await measure(
        "small JSON (identity)", transport: transport, server: server, path: "/json", concurrency: 64, requests: count)
    try await measure(
        "100 KB JSON (gzip)", transport: transport, server: server, path: "/gzip?n=100000", concurrency: 1,
        requests: count / 4)
    try await measure(
        "100 KB JSON (gzip)", transport: transport, server: server, path: "/gzip?n=100000", concurrency: 64,
        requests: count / 4)
}
if runs("services") {
    try await measureCoordinatorOverhead(loads: quick ? 2_000 : 10_000)
    try await measureCoalescing(server: server, transport: transport)
}
if runs("cache") { try await measureCaches(quick: quick) }
if runs("download") { try await measureDownload(server: server, transport: transport) }

await transport.shutdown()
await server.stop()

/// A 50 MB download to a file: peak memory before and after.
func measureDownload(server: TestServer, transport: CurlTransport) async throws {
    let before = peakRSSKilobytes()
    let directory = NSTemporaryDirectory() + "courier-demo-\(ProcessInfo.processInfo.processIdentifier)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    var options = TransferOptions()
    options.maximumBodySize = nil
    let download = HTTPRequest(method: .get, scheme: "http", authority: server.authority, path: "/bytes?n=\(50 << 20)")
    let response = try await transport.download(download, to: directory + "/50mb.bin", options: options)
    let size = (try FileManager.default.attributesOfItem(atPath: directory + "/50mb.bin")[.size] as? Int) ?? 0
    try? FileManager.default.removeItem(atPath: directory)
    print(
        "50 MB download: status \(response.head.status.code), \(size) bytes, peak RSS \(before / 1024) MB before, \(peakRSSKilobytes() / 1024) MB after (server included)"
    )
}
