// courier-fetch URL [OUTPUT]: fetches a URL with CurlTransport, to OUTPUT (streamed) or to
// stdout, then reports timings and this process's peak memory on stderr.
import Courier
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 2, let url = URL(string: arguments[1]), let scheme = url.scheme, let host = url.host else {
    FileHandle.standardError.write(Data("usage: courier-fetch URL [OUTPUT]\n".utf8))
    exit(64)
}
let authority = url.port.map { "\(host):\($0)" } ?? host
var path = url.path.isEmpty ? "/" : url.path
if let query = url.query { path += "?" + query }
let request = HTTPRequest(method: .get, scheme: scheme, authority: authority, path: path)
let transport = CurlTransport()
var options = TransferOptions()
options.maximumBodySize = nil
do {
    let response: TransportResponse
    if arguments.count >= 3 {
        response = try await transport.download(request, to: arguments[2], options: options)
    } else {
        response = try await transport.send(request, body: nil, options: options)
        FileHandle.standardOutput.write(response.body)
    }
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let peak = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? "VmHWM: ?"
    FileHandle.standardError.write(
        Data("HTTP \(response.head.status.code), \(response.metrics.bytesReceived) bytes, \(peak)\n".utf8))
} catch let error as ServiceError {
    FileHandle.standardError.write(Data("\(error)\n\(error.recoverySuggestion)\n".utf8))
    exit(1)
}
await transport.shutdown()
