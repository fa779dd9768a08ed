import Foundation

/// Which sanitizer a test run is under, from the options `scripts/sanitize.sh` exports.
public enum SanitizerRun {
    /// Under ThreadSanitizer. The memory probes (a child process each, with a burst of loads or
    /// a 50 MB body) are skipped there: resident memory under TSan's shadow memory measures
    /// nothing, and their instrumented children keep both cores busy for most of the run. They
    /// run in the plain and AddressSanitizer runs.
    public static var isThreadSanitizer: Bool { ProcessInfo.processInfo.environment["TSAN_OPTIONS"] != nil }
}
