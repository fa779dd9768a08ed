// A child process for the transport's memory test: measures resident memory before, during and
// after a burst of large bodies, so the test sees what the process keeps once they are gone.
//
//     courier-memory-probe <authority>
//
// Prints one line of JSON: {"baseline": bytes, "peak": bytes, "after": bytes, "received": bytes}.
import CourierTransport
import Foundation

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: courier-memory-probe <host:port>\n".utf8))
    exit(2)
}
let authority = CommandLine.arguments[1]

/// A field of /proc/self/status, in bytes.
func status(_ field: String) -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return kilobytes << 10
    }
    return 0
}

func request(_ path: String) -> HTTPRequest {
    HTTPRequest(method: .get, scheme: "http", authority: authority, path: path)
}

let transport = CurlTransport()
// Warm up: threads, curl's caches, the first connections.
for _ in 0..<4 { _ = try await transport.send(request("/bytes?n=100000")) }
let baseline = status("VmRSS")

// The burst: buffered identity bodies of several sizes (pooled and not), inflated gzip bodies,
// and a 48 MiB decompression that stays under the 64 MiB limit, all alive at once.
let paths =
    (0..<8).flatMap { round in
        [
            "/bytes?n=\(1 << 20)", "/bytes?n=\(3 << 20)", "/bytes?n=\(9 << 20)", "/gzip?n=\(6 << 20)",
            "/bytes?n=\(100_000 + round)",
        ]
    } + ["/gzip-bomb?mb=48", "/gzip-bomb?mb=48"]
var bodies = try await withThrowingTaskGroup(of: Data.self) { group in
    for path in paths { group.addTask { try await transport.send(request(path)).body } }
    var all: [Data] = []
    for try await body in group { all.append(body) }
    return all
}
let peak = status("VmHWM")
let received = bodies.reduce(0) { $0 + $1.count }
bodies = []
await transport.shutdown()
let after = status("VmRSS")
print(#"{"baseline": \#(baseline), "peak": \#(peak), "after": \#(after), "received": \#(received)}"#)
