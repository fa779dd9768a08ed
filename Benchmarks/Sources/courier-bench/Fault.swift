import Foundation

/// What the soak's fault server does with one request: a good answer or a fault.
///
/// The choice is a function of the seed, the request target and how many times that target was
/// asked for before (so a retry may meet another fault, or a good answer), which makes a run
/// reproducible: every load has a path of its own and retries its attempts one after another.
enum Fault: String, CaseIterable, Codable, Sendable {
    /// 200 with the payload as is.
    case identity
    /// 200 with the payload gzipped (when the request accepts gzip; identity otherwise).
    case gzip
    /// 200 with the payload, then the server closes the connection (`Connection: close`).
    case identityThenClose
    /// Reads the request and answers nothing, leaving the connection open.
    case stallBeforeHead
    /// Sends the head (with a `Content-Length`) and nothing more, leaving the connection open.
    case stallAfterHead
    /// Reads the request and resets the connection (`SO_LINGER` 0) before answering.
    case resetBeforeHead
    /// Sends the head and half of the body, then resets the connection.
    case resetInBody
    /// Announces the whole body's `Content-Length`, sends half of it and closes the connection.
    case truncatedBody
    /// 503 with `Retry-After: 0`.
    case unavailableRetryNow
    /// 503 with `Retry-After: 1`.
    case unavailableRetryLater
    /// `Content-Encoding: gzip` over a gzip stream with flipped bytes in the middle.
    case corruptGzip
    /// `Content-Encoding: gzip` over the first half of a gzip stream (a complete HTTP message).
    case truncatedGzip

    /// Per mille of the answers (they sum to 1,000): mostly good answers, every fault often
    /// enough to occur thousands of times in 100,000 loads.
    var weight: Int {
        switch self {
        case .identity: 370
        case .gzip: 370
        case .identityThenClose: 50
        case .stallBeforeHead: 10
        case .stallAfterHead: 10
        case .resetBeforeHead: 30
        case .resetInBody: 20
        case .truncatedBody: 30
        case .unavailableRetryNow: 30
        case .unavailableRetryLater: 10
        case .corruptGzip: 35
        case .truncatedGzip: 35
        }
    }

    /// The fault for the `attempt`-th request (from 0) for `target`, under `seed`.
    static func choose(seed: UInt64, target: Substring, attempt: Int) -> Fault {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a: stable across runs, unlike Hasher
        for byte in target.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        var roll = Int(splitMix(hash ^ splitMix(seed &+ UInt64(attempt))) % 1_000)
        for fault in allCases {
            if roll < fault.weight { return fault }
            roll -= fault.weight
        }
        preconditionFailure("invalid state: weights sum to less than 1,000")
    }

    private static func splitMix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

/// The soak's payloads: which one a path asks for, and their gzip forms (made once with
/// `/bin/gzip`, as the nginx scenarios do).
struct SoakPayloads: Sendable {
    let small: Data
    let medium: Data
    let smallGzip: Data
    let mediumGzip: Data

    /// Every tenth load asks for the 100 KB payload (many reads per body), the others for 1 KB.
    static func path(forLoad index: Int) -> String { index % 10 == 0 ? "/medium/\(index)" : "/small/\(index)" }

    static func expected(forLoad index: Int) -> Data { index % 10 == 0 ? Payloads.medium : Payloads.small }

    static func make() throws -> SoakPayloads {
        SoakPayloads(
            small: Payloads.small, medium: Payloads.medium, smallGzip: try gzipped(Payloads.small),
            mediumGzip: try gzipped(Payloads.medium))
    }

    /// The payload for a request target, plain or gzipped.
    func body(for target: Substring, gzip: Bool) -> Data {
        target.hasPrefix("/medium/") ? (gzip ? mediumGzip : medium) : (gzip ? smallGzip : small)
    }

    private static func gzipped(_ data: Data) throws -> Data {
        let file = NSTemporaryDirectory() + "courier-bench-soak-\(getpid())-\(data.count)"
        let undo = Cleanup.removes(file)
        defer {
            try? FileManager.default.removeItem(atPath: file)
            Cleanup.done(undo)
        }
        try data.write(to: URL(fileURLWithPath: file))
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-c", "-9", file]
        process.standardOutput = output
        try process.run()
        let compressed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, compressed.count > 18 else { throw BenchError("gzip failed") }
        return compressed
    }
}
