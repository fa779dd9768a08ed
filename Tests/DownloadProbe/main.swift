// A child process for the coordinator's download memory test: downloads a large body through a
// RequestCoordinator to a file and reports the process's resident memory before and at its peak,
// so the test sees the download never held the body in memory.
//
//     courier-download-probe <authority> <bytes> <destination>
//
// Prints one line of JSON: {"baseline": bytes, "peak": bytes, "size": bytes, "sanitized": bool}
// (`sanitized`: it runs under AddressSanitizer, whose allocator adds its own overhead).
import CourierServices
import Foundation

guard CommandLine.arguments.count == 4, let count = Int(CommandLine.arguments[2]) else {
    FileHandle.standardError.write(Data("usage: courier-download-probe <host:port> <bytes> <destination>\n".utf8))
    exit(2)
}
// Under AddressSanitizer, freed memory waits in a quarantine (256 MB by default) to catch uses
// after free, so resident memory would measure the sanitizer's quarantine, not the download.
// Start again without it; everything else stays checked.
if let options = ProcessInfo.processInfo.environment["ASAN_OPTIONS"], !options.contains("quarantine_size_mb") {
    setenv("ASAN_OPTIONS", options + ":quarantine_size_mb=0", 1)
    execv("/proc/self/exe", CommandLine.unsafeArgv)
    FileHandle.standardError.write(Data("courier-download-probe: cannot restart (errno \(errno))\n".utf8))
    exit(3)
}
let authority = CommandLine.arguments[1]
let destination = CommandLine.arguments[3]

/// A field of /proc/self/status, in bytes.
func status(_ field: String) -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return kilobytes << 10
    }
    return 0
}

struct Bytes: Resource {
    typealias Response = Data
    var count: Int
    var endpoint: Endpoint { Endpoint("http://\(authority)", path: "/bytes", query: ["n": "\(count)"]) }
}

let transport = CurlTransport()
let coordinator = RequestCoordinator(transport: transport)
// Warm up: threads, curl's caches, the first connection, the download path itself.
_ = try await coordinator.download(Bytes(count: 100_000), to: destination).value
let baseline = status("VmHWM")
let file = try await coordinator.download(Bytes(count: count), to: destination).value.value
let peak = status("VmHWM")
await coordinator.shutdown()
await transport.shutdown()
let sanitized = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil
print(#"{"baseline": \#(baseline), "peak": \#(peak), "size": \#(file.size), "sanitized": \#(sanitized)}"#)
