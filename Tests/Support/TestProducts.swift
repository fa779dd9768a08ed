import Foundation

extension CommandLine {
    /// The directory holding the test bundle and the package's executables (the child
    /// processes some tests start).
    public static var testProductsDirectory: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? arguments[0]
        return URL(fileURLWithPath: executable).deletingLastPathComponent().path
    }
}
