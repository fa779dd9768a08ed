internal import HTTPTypes

#if canImport(Glibc)
internal import Glibc
#endif

/// The field names the parser knows by their bytes: the common names' spellings, read with
/// `memcmp` from a table built once, and the role each plays in the parser's checks.
extension ResponseHeadParser {
    /// What the parser checks a field for, beyond its value.
    enum Role {
        case contentLength, location, contentEncoding, transferEncoding
        /// A field that may carry a secret (as may `Location`): never kept in ``RecentFields``.
        case setCookie
        case other

        init(of name: HTTPField.Name) {
            switch name {
            case .contentLength: self = .contentLength
            case .location: self = .location
            case .contentEncoding: self = .contentEncoding
            case .transferEncoding: self = .transferEncoding
            case .setCookie: self = .setCookie
            default: self = .other
            }
        }
    }

    /// One spelling of a common name: its bytes (`CommonTable/bytes`, from `offset`), what the
    /// parser checks, its place in ``RecentFields`` (none for a field that may carry a secret)
    /// and its name (`commonFieldNames`). Plain values: a lookup retains nothing.
    struct CommonSpelling {
        let offset: Int
        let role: Role
        let slot: Int?
        let name: Int
    }

    /// Field names most responses carry, each as sent in its usual spelling and in lowercase
    /// (HTTP/2). A name matching one byte for byte needs no validation or lowercasing.
    ///
    /// Built once and never written again nor freed, so every thread reads it without a lock
    /// (what makes it Sendable); in buffers rather than arrays of strings and names, whose
    /// every read retained them (some 30 reference counts a response).
    struct CommonTable: @unchecked Sendable {
        /// The spellings of length `n` are `spellings[starts[n]..<starts[n + 1]]`.
        let spellings: UnsafeBufferPointer<CommonSpelling>
        let starts: UnsafeBufferPointer<Int>
        let bytes: UnsafeBufferPointer<UInt8>
        let names: [HTTPField.Name]
        let slotCount: Int

        static let longest = 31

        init() {
            let common: [HTTPField.Name] = [
                .contentType, .contentLength, .date, .server, .connection, .lastModified, .eTag, .acceptRanges,
                .cacheControl, .expires, .vary, .location, .transferEncoding, .contentEncoding, .setCookie, .age,
            ]
            var byLength = [[(bytes: [UInt8], role: Role, slot: Int?, name: Int)]](
                repeating: [], count: Self.longest + 1)
            var names: [HTTPField.Name] = []
            var slots = 0
            for name in common {
                for spelling in [name, HTTPField.Name(name.canonicalName)].compactMap({ $0 }) {
                    let bytes = Array(spelling.rawName.utf8)
                    guard bytes.count <= Self.longest, !byLength[bytes.count].contains(where: { $0.bytes == bytes })
                    else {
                        continue
                    }
                    let role = Role(of: name)
                    let keeps = role != .setCookie && role != .location
                    byLength[bytes.count].append((bytes, role, keeps ? slots : nil, names.count))
                    names.append(spelling)
                    if keeps { slots += 1 }
                }
            }
            var spellings: [CommonSpelling] = []
            var starts: [Int] = []
            var bytes: [UInt8] = []
            for group in byLength {
                starts.append(spellings.count)
                for entry in group {
                    spellings.append(
                        CommonSpelling(offset: bytes.count, role: entry.role, slot: entry.slot, name: entry.name))
                    bytes += entry.bytes
                }
            }
            starts.append(spellings.count)
            self.spellings = Self.keep(spellings)
            self.starts = Self.keep(starts)
            self.bytes = Self.keep(bytes)
            self.names = names
            slotCount = slots
        }

        /// A copy of `array` that lives as long as the process.
        private static func keep<T>(_ array: [T]) -> UnsafeBufferPointer<T> {
            let buffer = UnsafeMutableBufferPointer<T>.allocate(capacity: max(array.count, 1))
            _ = buffer.initialize(from: array)
            return UnsafeBufferPointer(buffer)
        }
    }

    static let common = CommonTable()

    /// How many slots ``RecentFields`` needs: one per common spelling that it may keep.
    static var recentSlots: Int { common.slotCount }

    /// The common spelling `raw` is, if any.
    static func commonSpelling(_ raw: UnsafeBufferPointer<UInt8>) -> CommonSpelling? {
        guard raw.count <= CommonTable.longest, let base = raw.baseAddress else { return nil }
        let (spellings, starts, bytes) = (common.spellings, common.starts, common.bytes)
        for index in starts[raw.count]..<starts[raw.count + 1] {
            let spelling = spellings[index]
            if memcmp(bytes.baseAddress! + spelling.offset, base, raw.count) == 0 { return spelling }
        }
        return nil
    }

    /// A field's name as the line spells it: a common spelling (whose name is looked up only
    /// when its field is built, which most fields, repeating the last head's, are not) or
    /// another name, parsed.
    enum SpelledName {
        case common(CommonSpelling)
        case other(HTTPField.Name)

        var name: HTTPField.Name {
            switch self {
            case .common(let spelling): ResponseHeadParser.common.names[spelling.name]
            case .other(let name): name
            }
        }
        var role: Role {
            switch self {
            case .common(let spelling): spelling.role
            case .other(let name): Role(of: name)
            }
        }
        var slot: Int? {
            if case .common(let spelling) = self { spelling.slot } else { nil }
        }
    }
}
