/// Where a key path leads in a document.
enum KeyPathOutcome {
    /// The value is at this token (the only tokens written).
    case found(token: Int)
    /// `path[level]` is not a key of the object reached.
    case missing(level: Int)
    /// The value reached after `level` keys is not an object.
    case notObject(level: Int, kind: Token.Kind)
}

extension JSONParser {
    /// Parses and validates a whole document, writing tokens only for the value at `path`
    /// (object keys as they appear in the document; the first of repeated keys counts).
    mutating func parseDocument(keyPath path: [String]) throws(JSONSyntaxError) -> KeyPathOutcome {
        emitting = false
        skipByteOrderMark()
        skipWhitespace()
        let outcome: KeyPathOutcome
        if bytes[position] == UInt8(ascii: "{") {
            outcome = try parseObject(along: path, level: 0, depth: 1)
        } else {
            outcome = .notObject(level: 0, kind: kind(at: position))
            try parseValue(depth: 0)
        }
        try expectEnd()
        return outcome
    }

    private mutating func parseObject(along path: [String], level: Int, depth: Int) throws(JSONSyntaxError)
        -> KeyPathOutcome
    {
        guard depth <= Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth) levels") }
        position += 1
        skipWhitespace()
        var outcome: KeyPathOutcome? = nil
        if bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .missing(level: level)
        }
        while true {
            let key = try parseKey()
            if outcome == nil,
                StringDecoding.string(bytes, start: key.start, length: key.length, flags: key.flags) == path[level]
            {
                if level == path.count - 1 {
                    emitting = true
                    let token = tokens.count
                    try parseValue(depth: depth)
                    emitting = false
                    outcome = .found(token: token)
                } else if bytes[position] == UInt8(ascii: "{") {
                    outcome = try parseObject(along: path, level: level + 1, depth: depth + 1)
                } else {
                    outcome = .notObject(level: level + 1, kind: kind(at: position))
                    try parseValue(depth: depth)
                }
            } else {
                try parseValue(depth: depth)
            }
            if try atClosing(UInt8(ascii: "}"), of: "an object") { break }
        }
        return outcome ?? .missing(level: level)
    }

    /// The kind of the value starting at `offset` (already known to start a value, or about to
    /// fail validation).
    private func kind(at offset: Int) -> Token.Kind {
        switch bytes[offset] {
        case UInt8(ascii: "{"): .object
        case UInt8(ascii: "["): .array
        case UInt8(ascii: "\""): .string
        case UInt8(ascii: "t"): .true
        case UInt8(ascii: "f"): .false
        case UInt8(ascii: "n"): .null
        default: .number
        }
    }
}
