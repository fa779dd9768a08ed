/// One JSON value on the tape the parser writes: 16 bytes, no references.
///
/// A document becomes a flat array of tokens in document order. An object's token is followed
/// by its members (a `.string` key token, then the value's tokens), an array's by its elements.
/// `next` is the index just past the value, so a container is skipped in one step.
struct Token {
    enum Kind: UInt8 {
        case null, `true`, `false`, number, string, object, array
    }

    /// Flags of a string: it holds a backslash escape.
    static let escaped: UInt8 = 1
    /// Flags of a string: it holds a byte of 0x80 or more.
    static let nonASCII: UInt8 = 2
    /// Flags of a number: it has a fraction or an exponent.
    static let fractional: UInt8 = 4
    /// Flags of an object: two of its keys may be the same (after the key strategy), so
    /// lookups must take the first and may not start from the last match.
    static let mayRepeatKeys: UInt8 = 8

    /// Byte offset: the first byte inside the quotes for a string, the first character of a
    /// number or literal, the bracket of an array. For an object, the index of the key its
    /// next lookup starts from.
    var offset: UInt32
    /// Bytes between the quotes of a string, or of a number; members of an object; elements of
    /// an array.
    var length: UInt32
    /// The index of the token after this value.
    var next: UInt32
    var kind: Kind
    var flags: UInt8

    @inline(__always) func has(_ flag: UInt8) -> Bool { flags & flag != 0 }
}

/// The growable token array the parser appends to (a raw buffer: no uniqueness checks).
struct TokenBuffer: ~Copyable {
    private(set) var base: UnsafeMutablePointer<Token>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    @inline(__always)
    mutating func append(_ kind: Token.Kind, offset: Int, length: Int = 0, flags: UInt8 = 0) -> Int {
        if count == capacity { grow() }
        let index = count
        (base + index).initialize(
            to: Token(
                offset: UInt32(truncatingIfNeeded: offset), length: UInt32(truncatingIfNeeded: length),
                next: UInt32(truncatingIfNeeded: index + 1), kind: kind, flags: flags))
        count = index + 1
        return index
    }

    /// Sets a container's member count and end once its closing bracket is read. An object's
    /// `offset` becomes the index of its first key: from then on it holds where the next
    /// lookup starts (see `KeyedContainer`).
    @inline(__always)
    mutating func close(_ index: Int, count members: Int, flags: UInt8) {
        if base[index].kind == .object { base[index].offset = UInt32(truncatingIfNeeded: index + 1) }
        base[index].length = UInt32(truncatingIfNeeded: members)
        base[index].next = UInt32(truncatingIfNeeded: count)
        base[index].flags |= flags
    }

    /// Hands the tokens over; the caller deallocates `base`.
    consuming func take() -> (base: UnsafeMutablePointer<Token>, count: Int) {
        let result = (base, count)
        discard self
        return result
    }

    private mutating func grow() {
        let larger = capacity * 2
        let moved = UnsafeMutablePointer<Token>.allocate(capacity: larger)
        moved.moveInitialize(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = larger
    }
}
