/// Bounds on what Courier reads into `HTTPFields` from bytes others control (a server, a
/// fixture, a HAR file).
package enum FieldLimits {
    /// Header fields in one block at most. swift-http-types traps at 65,535 fields; real
    /// responses carry tens. More is a typed error, never a crash.
    package static let maximumCount = 10_000
}
