import CRawCurl
import Foundation
import Glibc
import Synchronization

/// nginx on 127.0.0.1 with a generated configuration in a temporary folder, serving the
/// payloads as they are (`/identity/...`) and pre-compressed (`/gz/...`, `gzip_static`, so the
/// server does no compression work; `/br/medium.json` and `/zstd/medium.json`, always in that
/// coding, as nginx has no module of its own for them), and `/slow/medium.json` at 64 KB/s (nginx sends the first
/// second's worth at once, so the 100 KB take about a second: for coalescing).
final class Nginx {
    let port: Int
    let prefix: String
    let version: String
    private let process: Process
    /// What undoes the server and its folder if the benchmark is interrupted.
    private var undo: [Cleanup.Token] = []

    var base: String { "http://127.0.0.1:\(port)" }
    var processIdentifier: Int32 { process.processIdentifier }

    private init(port: Int, prefix: String, version: String, process: Process) {
        self.port = port
        self.prefix = prefix
        self.version = version
        self.process = process
    }

    /// Starts nginx, or returns nil (saying why) when it cannot be had.
    static func start() throws -> Nginx? {
        guard
            let binary = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            print(
                "nginx not found (install it with: apt-get install nginx): running the parse and cache scenarios only")
            return nil
        }
        let prefix = NSTemporaryDirectory() + "courier-bench-nginx-\(getpid())"
        let folder = Cleanup.removes(prefix)
        let root = prefix + "/root"
        for folder in ["identity", "gz", "slow", "br", "zstd"] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(folder)", withIntermediateDirectories: true)
        }
        try FileManager.default.createDirectory(atPath: prefix + "/tmp", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/events", withIntermediateDirectories: true)
        try eventStreamPayload(count: eventStreamEvents).write(to: URL(fileURLWithPath: root + "/events/stream.txt"))
        for (name, data) in [("small.json", Payloads.small), ("medium.json", Payloads.medium)] {
            try data.write(to: URL(fileURLWithPath: "\(root)/identity/\(name)"))
            try data.write(to: URL(fileURLWithPath: "\(root)/gz/\(name)"))
            try data.write(to: URL(fileURLWithPath: "\(root)/slow/\(name)"))
            try run("/bin/gzip", ["-k", "-9", "-f", "\(root)/gz/\(name)"])
        }
        for (folder, compress) in [("br", raw_compress_brotli), ("zstd", raw_compress_zstd)] as [(String, RawCodec)] {
            try rawCompressed(Payloads.medium, compress).write(
                to: URL(fileURLWithPath: "\(root)/\(folder)/medium.json"))
        }
        let port = try freePort()
        let config = """
            worker_processes 1;
            daemon off;
            pid \(prefix)/nginx.pid;
            error_log \(prefix)/error.log warn;
            events { worker_connections 4096; }
            http {
                access_log off;
                sendfile on;
                tcp_nopush on;
                tcp_nodelay on;
                keepalive_requests 10000000;
                keepalive_timeout 120s;
                default_type application/json;
                client_body_temp_path \(prefix)/tmp/body;
                proxy_temp_path \(prefix)/tmp/proxy;
                fastcgi_temp_path \(prefix)/tmp/fastcgi;
                uwsgi_temp_path \(prefix)/tmp/uwsgi;
                scgi_temp_path \(prefix)/tmp/scgi;
                server {
                    listen 127.0.0.1:\(port) reuseport backlog=4096;
                    root \(root);
                    location /gz/ { gzip_static on; }
                    location /slow/ { limit_rate 64k; }
                    location /events/ { default_type text/event-stream; types { } }
                    location /br/ { add_header Content-Encoding br; }
                    location /zstd/ { add_header Content-Encoding zstd; }
                    # The fleet scenario's origin: slow, cacheable for a minute, counted in its log.
                    location /fleet/ {
                        alias \(root)/slow/;
                        limit_rate 64k;
                        expires 60s;
                        access_log \(prefix)/fleet.log;
                    }
                    # The purge scenario's origin: fresh for a minute, then stale while revalidated.
                    location /purge/ {
                        alias \(root)/slow/;
                        add_header Cache-Control "max-age=60, stale-while-revalidate=60";
                        access_log \(prefix)/purge.log;
                    }
                }
            }
            """
        try config.write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-p", prefix, "-c", prefix + "/nginx.conf", "-e", prefix + "/error.log"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        let running = Cleanup.register { stopProcess(pid) }
        let version = (try? capture(binary, ["-v"])) ?? "nginx"
        let server = Nginx(port: port, prefix: prefix, version: version, process: process)
        server.undo = [folder, running]
        for _ in 0..<100 where !canConnect(port: port) { usleep(50_000) }
        guard canConnect(port: port) else {
            server.stop()
            let log = (try? String(contentsOfFile: prefix + "/error.log", encoding: .utf8)) ?? ""
            print("nginx did not start (\(log.prefix(300))): running the parse and cache scenarios only")
            return nil
        }
        return server
    }

    /// Requests for `/fleet/` whose line contains `text`, from the access log.
    func fleetRequests(containing text: String) -> Int {
        let log = (try? String(contentsOfFile: prefix + "/fleet.log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").count { $0.contains(text) }
    }

    /// Requests for `/purge/` whose line contains every one of `texts`, from its access log.
    func purgeRequests(containing texts: String...) -> Int {
        let log = (try? String(contentsOfFile: prefix + "/purge.log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").count { line in texts.allSatisfy { line.contains($0) } }
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: prefix)
        for token in undo { Cleanup.done(token) }
    }
}

/// Sends `pid` SIGTERM and waits (5 s at most) until it has ended, for ``Cleanup``.
func stopProcess(_ pid: Int32) {
    guard pid > 0, kill(pid, SIGTERM) == 0 else { return }
    for _ in 0..<500 {
        if kill(pid, 0) != 0 { return }
        // An ended child that nobody reaped yet is a zombie: gone for this purpose.
        let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        if let close = state.lastIndex(of: ")"), state[state.index(close, offsetBy: 2)...].hasPrefix("Z") { return }
        usleep(10_000)
    }
}

/// Runs a command and waits for it.
func run(_ path: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
}

/// Runs a command and returns what it printed (stdout and stderr). The command is stopped with
/// the benchmark if the benchmark is interrupted (a load generator would not end with it).
func capture(_ path: String, _ arguments: [String]) throws -> String {
    let process = Process()
    let pipe = Pipe()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let pid = process.processIdentifier
    let running = Cleanup.register { kill(pid, SIGKILL) }
    defer { Cleanup.done(running) }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// A TCP port nobody listens on right now.
func freePort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
        }
    }
    guard bound else { throw BenchError("could not find a free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

func canConnect(port: Int) -> Bool {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
