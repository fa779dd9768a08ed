// A child process for the OpenAPI transport's upload memory test: sends a large request body of
// unknown length through a CourierClientTransport (the body made chunk by chunk as it is read)
// and reports the process's resident memory before and at its peak, so the test sees the body
// was spooled to disk, never held whole.
//
//     courier-upload-probe <authority> <bytes> <spool directory>
//
// Sends `PUT /openapi/uploads/probe` and prints one line of JSON:
// {"baseline": bytes, "peak": bytes, "status": code, "sanitized": bool}
// (`sanitized`: it runs under AddressSanitizer, whose allocator adds its own overhead).
import CourierOpenAPI
import CourierServices
import CourierTestServer
import CourierTransport
import Foundation
import HTTPTypes
import OpenAPIRuntime

guard CommandLine.arguments.count == 4, let count = Int(CommandLine.arguments[2]) else {
    FileHandle.standardError.write(Data("usage: courier-upload-probe <host:port> <bytes> <spool directory>\n".utf8))
    exit(2)
}
// Under AddressSanitizer, freed memory waits in a quarantine (256 MB by default), so resident
// memory would measure the quarantine, not the upload. Start again without it.
if let options = ProcessInfo.processInfo.environment["ASAN_OPTIONS"], !options.contains("quarantine_size_mb") {
    setenv("ASAN_OPTIONS", options + ":quarantine_size_mb=0", 1)
    execv("/proc/self/exe", CommandLine.unsafeArgv)
    FileHandle.standardError.write(Data("courier-upload-probe: cannot restart (errno \(errno))\n".utf8))
    exit(3)
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

/// `count` bytes of the test server's pattern, in 64 KiB chunks made as they are read.
struct Pattern: AsyncSequence, Sendable {
    let count: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let count: Int
        var offset = 0

        mutating func next() async -> HTTPBody.ByteChunk? {
            guard offset < count else { return nil }
            let size = Swift.min(64 << 10, count - offset)
            var chunk = [UInt8](repeating: 0, count: size)
            chunk.withUnsafeMutableBytes { Payloads.fillPattern($0, offset: offset) }
            offset += size
            return chunk[...]
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count) }
}

func upload(_ name: String, _ count: Int, through transport: CourierClientTransport) async throws -> Int {
    let request = HTTPRequest(method: .put, scheme: nil, authority: nil, path: "/uploads/\(name)")
    let body = HTTPBody(Pattern(count: count), length: .unknown, iterationBehavior: .single)
    let (response, responseBody) = try await transport.send(
        request, body: body, baseURL: URL(string: "http://\(authority)/openapi")!, operationID: "upload")
    if let responseBody { _ = try await Data(collecting: responseBody, upTo: 1 << 20) }
    return response.status.code
}

/// Warms up, then measures the upload; everything it made is released when it returns, so that
/// LeakSanitizer (under `--sanitize=address`) sees only what truly leaked.
func measure() async throws -> (baseline: Int, peak: Int, status: Int) {
    let curl = CurlTransport()
    let coordinator = RequestCoordinator(transport: curl)
    var configuration = CourierClientTransport.Configuration()
    configuration.requestBodySpoolDirectory = URL(filePath: CommandLine.arguments[3], directoryHint: .isDirectory)
    configuration.maximumRequestBodySize = Int.max
    let transport = CourierClientTransport(coordinator: coordinator, configuration: configuration)
    // Warm up: threads, curl's caches, the first connection, the spool path itself.
    _ = try await upload("warm-up", 3 << 20, through: transport)
    let baseline = status("VmHWM")
    let code = try await upload("probe", count, through: transport)
    let peak = status("VmHWM")
    await coordinator.shutdown()
    await curl.shutdown()
    return (baseline, peak, code)
}

let figures = try await measure()
let sanitized = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil
print(
    #"{"baseline": \#(figures.baseline), "peak": \#(figures.peak), "status": \#(figures.status), "sanitized": \#(sanitized)}"#
)
