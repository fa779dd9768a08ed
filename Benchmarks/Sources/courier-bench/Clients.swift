import CRawCurl
import Courier
import Foundation
import Glibc

#if Peers
import AsyncHTTPClient
import NIOCore
#endif
#if Peers
import FoundationNetworking
#endif

/// The HTTP clients compared end to end. Each runs in a child process of its own, so its CPU
/// time and peak memory are its own.
enum Client: String, CaseIterable, Sendable {
    /// What users get: the default configuration (coalescing automatic, default retries, the
    /// default memory cache with a `.networkOnly` resource), one distinct URL per request.
    case courierDefaults = "Courier load(), defaults"
    case courier = "Courier load()"
    case courierOnLoop = "Courier load(), loop executor"
    case transport = "Courier CurlTransport"
    /// `send` of the very requests `courierDefaults` makes (a query item per request): the
    /// transport under a default `load()`, for the instruction counts.
    case transportDistinct = "Courier CurlTransport, distinct URLs"
    case transportOnLoop = "Courier CurlTransport, loop executor"
    case transportOneLoop = "Courier CurlTransport, 1 loop"
    case transportTwoLoops = "Courier CurlTransport, 2 loops"
    case raw = "raw libcurl multi (C)"
    case asyncHTTPClient = "async-http-client"
    case urlSession = "URLSession"

    var flag: String {
        switch self {
        case .courierDefaults: "courier-defaults"
        case .courier: "courier"
        case .courierOnLoop: "courier-loop"
        case .transport: "transport"
        case .transportDistinct: "transport-distinct"
        case .transportOnLoop: "transport-loop"
        case .transportOneLoop: "transport-1loop"
        case .transportTwoLoops: "transport-2loops"
        case .raw: "raw"
        case .asyncHTTPClient: "ahc"
        case .urlSession: "urlsession"
        }
    }

    /// One of ours (compared with async-http-client too).
    var isCourier: Bool {
        [
            .courierDefaults, .courier, .courierOnLoop, .transport, .transportDistinct, .transportOnLoop,
            .transportOneLoop, .transportTwoLoops,
        ].contains(self)
    }

    /// Loops set explicitly (`nil`: the default, ``CurlTransport/Configuration/defaultLoops``).
    var loops: Int? { self == .transportOneLoop ? 1 : self == .transportTwoLoops ? 2 : nil }

    /// Whether the client runs in `scenario`: the loop-count rows only where one host is busy;
    /// the distinct-URL transport only for instruction counts; for brotli and zstd, `load()` and
    /// the transport against libcurl's own decoders and async-http-client with the library's
    /// one-shot decoder.
    func runs(in scenario: String, coding: ResponseCoding) -> Bool {
        #if !Peers
        if self == .asyncHTTPClient || self == .urlSession { return false }
        #endif
        if coding == .brotli || coding == .zstd {
            return [.courierDefaults, .courier, .transport, .raw, .asyncHTTPClient].contains(self)
        }
        return self != .transportDistinct && (loops == nil || scenario == "small identity c=64")
    }

    /// Whether the client's tasks prefer the transport's loop thread as their executor.
    var prefersLoopExecutor: Bool { self == .courierOnLoop || self == .transportOnLoop }

    init?(flag: String) {
        guard let client = Client.allCases.first(where: { $0.flag == flag }) else { return nil }
        self = client
    }
}

/// The content coding a scenario's responses come in (nginx serves each pre-compressed, from
/// its own folder, whatever the request's `Accept-Encoding`).
enum ResponseCoding: String, Sendable {
    case identity, gzip
    case brotli = "br"
    case zstd

    /// nginx's folder for the coding.
    var folder: String { self == .gzip ? "gz" : rawValue }
    /// What a client that decodes by itself asks for; `nil` for identity.
    var acceptEncoding: String? { self == .identity ? nil : rawValue }
}

/// What one child process measured.
struct ClientRun: Codable, Sendable {
    var requests: Int
    var failures: Int
    var seconds: Double
    var cpuSeconds: Double
    /// CPU seconds of the curl loop threads alone (0 for other clients).
    var loopCPUSeconds: Double
    var peakRSSKilobytes: Int
    var bytes: Int
}

/// A resource delivering the inflated bytes, so that transport is measured apart from parsing.
struct BytesResource: Resource {
    typealias Response = Data
    /// Split once, as a typical resource's constant base URL and path.
    let base: String
    let path: String

    init(url: String) {
        let schemeEnd = url.range(of: "://")!.upperBound
        let pathStart = url[schemeEnd...].firstIndex(of: "/") ?? url.endIndex
        base = String(url[..<pathStart])
        path = String(url[pathStart...])
    }

    var endpoint: Endpoint { Endpoint(base, path: path) }
    var retryPolicy: RetryPolicy? { RetryPolicy.none }
}

/// A default resource whose URL differs per request (a query item nginx ignores), so nothing
/// joins: the per-load cost of the default configuration, not coalescing.
struct DistinctBytesResource: Resource {
    typealias Response = Data
    let base: String
    let path: String
    let index: Int

    var endpoint: Endpoint { Endpoint(base, path: path, query: [URLQueryItem(name: "i", value: String(index))]) }
}

/// The child's side: runs `requests` GETs of `url` at `concurrency` with `client` after a warm-up,
/// then prints one JSON line.
func runChild(client: Client, url: String, concurrency: Int, requests: Int, coding: ResponseCoding) async throws {
    let warmup = min(max(concurrency * 2, 50), requests)
    let work: (Int) async throws -> (Int, Int)
    var cleanup: () async throws -> Void = {}
    switch client {
    case .courierDefaults:
        let transport = CurlTransport()
        let coordinator = RequestCoordinator(transport: transport)
        let parts = BytesResource(url: url)
        work = { count in
            try await concurrently(count, concurrency) { index in
                try await DistinctBytesResource(base: parts.base, path: parts.path, index: index).load(
                    using: coordinator
                ).count
            }
        }
        cleanup = { await transport.shutdown() }
    case .courier, .courierOnLoop:
        let transport = CurlTransport()
        var configuration = RequestCoordinator.Configuration()
        configuration.coalescesDuplicateLoads = false
        configuration.retryPolicy = .none
        let coordinator = RequestCoordinator(transport: transport, configuration: configuration)
        let resource = BytesResource(url: url)
        let executor = client.prefersLoopExecutor ? transport.taskExecutor : nil
        work = { count in
            try await withTaskExecutorPreference(executor) {
                try await concurrently(count, concurrency) { _ in try await resource.load(using: coordinator).count }
            }
        }
        cleanup = { await transport.shutdown() }
    case .transportDistinct:
        let transport = CurlTransport()
        let parts = BytesResource(url: url)
        let authority = parts.base.replacingOccurrences(of: "http://", with: "")
        work = { count in
            try await concurrently(count, concurrency) { index in
                // The request `DistinctBytesResource` builds, made here as a caller of `send` would.
                let request = HTTPRequest(
                    method: .get, scheme: "http", authority: authority, path: "\(parts.path)?i=\(index)")
                return try await transport.send(request).body.count
            }
        }
        cleanup = { await transport.shutdown() }
    case .transport, .transportOnLoop, .transportOneLoop, .transportTwoLoops:
        var configuration = CurlTransport.Configuration()
        if let loops = client.loops { configuration.loops = loops }
        let transport = CurlTransport(configuration: configuration)
        let parts = BytesResource(url: url).endpoint
        let authority = parts.baseURL.replacingOccurrences(of: "http://", with: "")
        let request = HTTPRequest(method: .get, scheme: "http", authority: authority, path: parts.path)
        let executor = client.prefersLoopExecutor ? transport.taskExecutor : nil
        work = { count in
            try await withTaskExecutorPreference(executor) {
                try await concurrently(count, concurrency) { _ in try await transport.send(request).body.count }
            }
        }
        cleanup = { await transport.shutdown() }
    case .raw:
        work = { count in
            var result = raw_curl_result()
            let status = raw_curl_run(url, Int32(concurrency), Int64(count), coding.acceptEncoding, &result)
            guard status == 0 else { throw BenchError("curl multi failed with \(status)") }
            return (Int(result.bytes), Int(result.failed))
        }
    #if Peers
    case .asyncHTTPClient:
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .enabled(limit: .none)
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(concurrency, 8))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        work = { count in
            try await concurrently(count, concurrency) { _ in
                var request = HTTPClientRequest(url: url)
                if let accept = coding.acceptEncoding { request.headers.add(name: "Accept-Encoding", value: accept) }
                let response = try await client.execute(request, timeout: .seconds(30))
                let body = try await response.body.collect(upTo: 64 << 20)
                // async-http-client decodes gzip and deflate; brotli and zstd as its users do:
                // the library's one-shot decoder over the collected body.
                switch coding {
                case .identity, .gzip: return body.readableBytes
                case .brotli: return try oneShotDecoded(body, raw_decompress_brotli)
                case .zstd: return try oneShotDecoded(body, raw_decompress_zstd)
                }
            }
        }
        cleanup = { try await client.shutdown() }
    case .urlSession:
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = max(concurrency, 6)
        let session = URLSession(configuration: configuration)
        let target = URL(string: url)!
        work = { count in
            try await concurrently(count, concurrency) { _ in
                var request = URLRequest(url: target)
                if let accept = coding.acceptEncoding {
                    request.setValue(accept, forHTTPHeaderField: "Accept-Encoding")
                }
                return try await session.data(for: request).0.count
            }
        }
        cleanup = { session.invalidateAndCancel() }
    #else
    case .asyncHTTPClient, .urlSession:
        throw BenchError("\(client.rawValue) needs the Peers trait (built without it)")
    #endif
    }
    try await measureChild(requests: requests, warmup: warmup, work: work, cleanup: cleanup)
}

#if Peers
/// The size of `body` decoded by a C one-shot decoder, into a buffer of 16 times its size.
func oneShotDecoded(_ body: ByteBuffer, _ decode: RawCodec) throws -> Int {
    let capacity = max(body.readableBytes * 16, 4096)
    let output = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    defer { output.deallocate() }
    let produced = body.withUnsafeReadableBytes { decode($0.baseAddress, Int64($0.count), output, Int64(capacity)) }
    guard produced >= 0 else { throw BenchError("the one-shot decoder refused the body") }
    return Int(produced)
}
#endif

/// Runs `count` operations with `width` workers; returns the bytes delivered and the failures.
func concurrently(
    _ count: Int, _ width: Int, _ operation: @escaping @Sendable (Int) async throws -> Int
) async throws -> (Int, Int) {
    try await withThrowingTaskGroup(of: (Int, Int).self) { group in
        for worker in 0..<min(width, count) {
            group.addTask {
                var bytes = 0
                var failures = 0
                for index in stride(from: worker, to: count, by: width) {
                    do { bytes += try await operation(index) } catch { failures += 1 }
                }
                return (bytes, failures)
            }
        }
        var total = (0, 0)
        for try await (bytes, failures) in group { total = (total.0 + bytes, total.1 + failures) }
        return total
    }
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
        + Double(usage.ru_stime.tv_usec) / 1e6
}

func peakRSSKilobytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
