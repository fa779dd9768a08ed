/// Why a document is not valid JSON (RFC 8259), and where: the `underlyingError` of the
/// `DecodingError.dataCorrupted` that ``CourierJSONDecoder`` throws for it.
public struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, e.g. "unterminated string" or "unexpected character 'x'".
    public var reason: String
    /// The byte offset of the problem in the document.
    public var offset: Int
    /// The 1-based line and column (in bytes) of the problem.
    public var line: Int
    public var column: Int

    public var description: String { "\(reason) at line \(line), column \(column) (byte \(offset))" }

    init(_ reason: String, at offset: Int, in bytes: UnsafePointer<UInt8>, count: Int) {
        self.reason = reason
        self.offset = offset
        var line = 1
        var lineStart = 0
        var index = 0
        while index < min(offset, count) {
            if bytes[index] == UInt8(ascii: "\n") {
                line += 1
                lineStart = index + 1
            }
            index += 1
        }
        self.line = line
        column = offset - lineStart + 1
    }
}
