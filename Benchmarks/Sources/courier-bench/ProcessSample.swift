import Foundation
import Glibc

/// This process's open file descriptors (`/proc/self/fd`), threads and resident memory
/// (`Threads` and `VmRSS` in `/proc/self/status`) at one moment.
struct ProcessSample: Codable, Sendable {
    var fileDescriptors: Int
    var threads: Int
    var residentKilobytes: Int

    var residentMegabytes: Double { Double(residentKilobytes) / 1024 }

    static func now() -> ProcessSample {
        var threads = 0
        var resident = 0
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) {
            for line in status.split(separator: "\n") {
                let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard fields.count >= 2, let value = Int(fields[1]) else { continue }
                if fields[0] == "Threads:" { threads = value }
                if fields[0] == "VmRSS:" { resident = value }
            }
        }
        return ProcessSample(fileDescriptors: openFileDescriptors(), threads: threads, residentKilobytes: resident)
    }

    /// Entries of `/proc/self/fd`, less the one `opendir` holds while counting.
    private static func openFileDescriptors() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let isDot = withUnsafeBytes(of: entry.pointee.d_name) { $0.first == UInt8(ascii: ".") }
            if !isDot { count += 1 }
        }
        return count - 1
    }
}

/// The samples of one soak: before it, at 10% of the loads, at the end (connections still
/// pooled), after the transport shut down, and the peak of the periodic samples.
struct SoakSamples: Codable, Sendable {
    var before: ProcessSample
    var atTenPercent: ProcessSample?
    var atEnd: ProcessSample?
    var afterShutdown: ProcessSample?
    var peak: ProcessSample
    var periodic: [ProcessSample] = []

    init(before: ProcessSample) {
        self.before = before
        peak = before
    }

    mutating func record(_ sample: ProcessSample) {
        periodic.append(sample)
        peak.fileDescriptors = max(peak.fileDescriptors, sample.fileDescriptors)
        peak.threads = max(peak.threads, sample.threads)
        peak.residentKilobytes = max(peak.residentKilobytes, sample.residentKilobytes)
    }

    /// The growth the soak tolerates from the 10% mark to the end: a few descriptors (a
    /// connection being replaced while the sample is taken), a few threads (Dispatch's pool
    /// may add one), and a quarter more memory (allocator fragmentation, buffer pools filling
    /// up): more than that is a leak of one of them per load or per fault.
    static let extraFileDescriptors = 8
    static let extraThreads = 4
    static let residentGrowth = 0.25
    /// Once the transport has shut down, its connections are closed: the count is back to
    /// what it was before the soak, give or take these.
    static let extraFileDescriptorsAfterShutdown = 2

    /// Why the samples fail the soak; empty when they pass.
    var failures: [String] {
        guard let mark = atTenPercent, let end = atEnd else { return ["no sample at 10% or at the end"] }
        var reasons: [String] = []
        if end.fileDescriptors > mark.fileDescriptors + Self.extraFileDescriptors {
            reasons.append("file descriptors grew from \(mark.fileDescriptors) to \(end.fileDescriptors)")
        }
        if end.threads > mark.threads + Self.extraThreads {
            reasons.append("threads grew from \(mark.threads) to \(end.threads)")
        }
        if Double(end.residentKilobytes) > Double(mark.residentKilobytes) * (1 + Self.residentGrowth) {
            reasons.append(
                String(format: "RSS grew from %.1f MB to %.1f MB", mark.residentMegabytes, end.residentMegabytes))
        }
        if let after = afterShutdown,
            after.fileDescriptors > before.fileDescriptors + Self.extraFileDescriptorsAfterShutdown
        {
            reasons.append(
                "\(after.fileDescriptors - before.fileDescriptors) more file descriptors after shutdown than before")
        }
        return reasons
    }
}

/// CPU seconds spent so far by this process's curl loop threads (named `courier-curl…`), from
/// `/proc/self/task/*/stat`: the loop's share of each request's work.
func loopThreadCPUSeconds() -> Double {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
    var ticks = 0
    for task in tasks {
        guard let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
            name.hasPrefix("courier-curl"),
            let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { continue }
        // After "pid (comm) ", field 3 is the state; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { continue }
        ticks += user + system
    }
    return Double(ticks) / ticksPerSecond
}
