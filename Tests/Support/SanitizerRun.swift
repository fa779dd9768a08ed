import Foundation

/// Which sanitizer a test run is under, from the options `scripts/sanitize.sh` exports.
public enum SanitizerRun {
    /// Under ThreadSanitizer. The memory probes (a child process each, with a burst of loads or
    /// a 50 MB body) are skipped there: resident memory under TSan's shadow memory measures
    /// nothing, and on 2 cores their instrumented children and the server answering them took
    /// the CPU from every other test for a minute, so that unrelated 60 s limits fired.
    public static var isThreadSanitizer: Bool { ProcessInfo.processInfo.environment["TSAN_OPTIONS"] != nil }
}
