// cache-conformance-proxy: an HTTP proxy on 127.0.0.1 that sends every request it receives
// through one RequestCoordinator whose resources use `CachePolicy.http()` over a memory tier,
// to an origin given on the command line, and answers with what Courier returned (its status,
// fields and body). It puts Courier's HTTP cache where a browser's would be for the public
// cache-tests suite (https://github.com/http-tests/cache-tests); scripts/cache-conformance.sh
// runs the suite through it and compares the result with the browsers' published ones.
//
//     cache-conformance-proxy ORIGIN [PORT] [--5xx-values]     e.g. http://127.0.0.1:8000 8001
//
// The resource is what a user's would be under `.http()`: 2xx to 4xx answers are values, and a
// 5xx is the error `unacceptableStatus` (so `stale-if-error` applies, and `CacheableStatus.http`
// stores it only while it is fresh), unless `--5xx-values` makes every status a value. It serves
// a stored response stale when the origin gives no answer (`servingStaleWhenUnreachable`, as an
// offline-tolerant client would). No redirect is followed, no retry is made. A load that fails
// with a status (a 5xx, an `only-if-cached` miss's 504) answers that status and the body
// excerpt; any other failure answers 502 with the error's message.
import Courier
import Foundation
import Glibc
import Synchronization

/// One request as received, forwarded as a resource: the method, target and fields of the
/// client's request, 1xx to 4xx accepted, no retries and no coalescing.
struct Forwarded: Resource {
    typealias Response = Data
    let endpoint: Endpoint
    let method: HTTPRequest.Method
    let headers: HTTPFields
    let requestBody: Data?
    var body: RequestBody? { requestBody.map { .bytes($0) } }
    var cachePolicy: CachePolicy { .http(tiers: .memory).servingStaleWhenUnreachable() }
    var acceptableStatus: Range<Int> { CacheConformanceProxy.serverErrorsAreValues ? 100..<600 : 100..<500 }
    var cacheableStatus: CacheableStatus { .http }
    var retryPolicy: RetryPolicy? { RetryPolicy.none }
    var coalescing: Coalescing { .never }
}

/// A request read from a connection.
struct Received {
    var method: String
    var target: String
    var fields: [(String, String)]
    var body: Data
}

@main
enum CacheConformanceProxy {
    /// `--5xx-values`: 5xx answers are values too, as for a resource that accepts them.
    static let serverErrorsAreValues = CommandLine.arguments.dropFirst(2).contains("--5xx-values")

    /// Fields that describe one connection, not the message: never forwarded either way.
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host",
        "content-length",
    ]

    /// Reads one request (head and `Content-Length` body) from `connection`; nil at its end.
    static func read(_ connection: Int32) -> Received? {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        func fill() -> Bool {
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[..<count])
            return true
        }
        let terminator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil {
            if let range = buffer.firstRange(of: terminator) {
                headEnd = range.lowerBound
            } else if !fill() {
                return nil
            }
        }
        let lines = String(decoding: buffer[..<headEnd!], as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = lines[0].split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var fields: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields.append(
                (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        let length = max(0, fields.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0)
        let bodyStart = headEnd! + 4
        while buffer.count < bodyStart + length {
            guard fill() else { return nil }
        }
        return Received(
            method: String(requestLine[0]), target: String(requestLine[1]), fields: fields,
            body: Data(buffer[bodyStart..<(bodyStart + length)]))
    }

    /// Sends `received` through Courier and returns the answer's bytes.
    static func answer(_ received: Received, origin: URL, coordinator: RequestCoordinator) async -> [UInt8] {
        var status = 502
        var reason = "Bad Gateway"
        var fields: [(String, String)] = []
        var body = Data()
        var headers = HTTPFields()
        for (name, value) in received.fields where !hopByHop.contains(name.lowercased()) {
            if let field = HTTPField.Name(name) { headers.append(HTTPField(name: field, value: value)) }
        }
        guard let components = URLComponents(string: received.target), received.target.hasPrefix("/") else {
            return Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
        }
        let resource = Forwarded(
            endpoint: Endpoint(
                origin.absoluteString, path: components.percentEncodedPath, query: components.queryItems ?? []),
            method: HTTPRequest.Method(received.method) ?? .get, headers: headers,
            requestBody: received.body.isEmpty ? nil : received.body)
        do {
            let loaded = try await resource.loadResponse(using: coordinator)
            status = loaded.response.status.code
            reason = loaded.response.status.reasonPhrase
            for field in loaded.response.headerFields where !hopByHop.contains(field.name.canonicalName) {
                fields.append((field.name.rawName, field.value))
            }
            body = loaded.value
        } catch {
            if error.code == .unacceptableStatus || error.code == .cacheMiss, let response = error.response {
                status = response.status.code
                reason = response.status.reasonPhrase
                for field in response.headerFields where !hopByHop.contains(field.name.canonicalName) {
                    fields.append((field.name.rawName, field.value))
                }
                body = Data((error.bodyExcerpt ?? "").utf8)
            } else {
                body = Data("\(error)\n".utf8)
                fields.append(("Content-Type", "text/plain"))
            }
        }
        // A HEAD answer, a 204 and a 304 have no body, and no Content-Length of one (RFC 9110, 8.6).
        let bodiless = received.method == "HEAD" || status == 204 || status == 304
        if bodiless { body = Data() }
        var head = "HTTP/1.1 \(status) \(reason)\r\n"
        for (name, value) in fields { head += "\(name): \(value)\r\n" }
        head += bodiless ? "Connection: close\r\n\r\n" : "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + Array(body)
    }

    /// Serves one connection: one request, one answer, then close.
    static func serve(_ connection: Int32, origin: URL, coordinator: RequestCoordinator) {
        defer { close(connection) }
        guard let received = read(connection) else { return }
        let done = DispatchSemaphore(value: 0)
        let bytes = Mutex<[UInt8]>([])
        Task {
            let answered = await answer(received, origin: origin, coordinator: coordinator)
            bytes.withLock { $0 = answered }
            done.signal()
        }
        done.wait()
        let output = bytes.withLock { $0 }
        var sent = 0
        while sent < output.count {
            let count = output[sent...].withUnsafeBytes {
                send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if count <= 0 { return }
            sent += count
        }
    }

    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count >= 2, let origin = URL(string: arguments[1]), origin.host != nil else {
            FileHandle.standardError.write(Data("usage: cache-conformance-proxy ORIGIN [PORT] [--5xx-values]\n".utf8))
            exit(2)
        }
        let requestedPort = arguments.dropFirst(2).lazy.compactMap { UInt16($0) }.first ?? 0

        var configuration = RequestCoordinator.Configuration()
        configuration.cache = TieredCache(memory: .init(totalCost: 64 << 20))
        configuration.transferOptions.redirects = .none  // a proxy passes redirects on
        // The suite's origin fails on purpose, test after test: it measures the cache, not a
        // breaker that would stop sending to it.
        configuration.circuitBreaker = nil
        let coordinator = RequestCoordinator(transport: CurlTransport(), configuration: configuration)
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = requestedPort.bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard listener >= 0, bound, listen(listener, 1024) == 0 else {
            FileHandle.standardError.write(
                Data("cache-conformance-proxy: cannot listen on port \(requestedPort)\n".utf8))
            exit(1)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        print("port \(UInt16(bigEndian: address.sin_port))")
        fflush(nil)
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            Thread.detachNewThread { serve(connection, origin: origin, coordinator: coordinator) }
        }
    }
}
