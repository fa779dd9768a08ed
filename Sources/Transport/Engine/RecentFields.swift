internal import HTTPTypes

#if canImport(Glibc)
internal import Glibc
#endif

/// The last field built for each common field name (``ResponseHeadParser``'s table), per
/// thread: responses from one server repeat most of their header lines byte for byte
/// (`Server`, `Content-Type`, `ETag`, `Last-Modified`...), and a line that matches the last one
/// reuses its field instead of building the string and checking it again (some 600
/// instructions a field).
///
/// One per thread, reached through a thread-specific key, so no lock: a thread parses one
/// head at a time. Bounded: one value of at most ``maximumValueBytes`` per name, its buffer
/// reused.
final class RecentFields {
    static let maximumValueBytes = 128
    static let slots = 32

    // Thread-confined (see the type's doc): no dynamic exclusivity checks needed.
    @exclusivity(unchecked) private var values: [[UInt8]]
    @exclusivity(unchecked) private var fields: [HTTPField?]

    private init() {
        values = Array(repeating: [], count: Self.slots)
        fields = Array(repeating: nil, count: Self.slots)
    }

    /// The field last built for `slot` if its value had exactly these bytes.
    func field(slot: Int, value: UnsafeRawBufferPointer) -> HTTPField? {
        guard let field = fields[slot] else { return nil }
        let matches = values[slot].withUnsafeBytes { kept in
            kept.count == value.count && (value.isEmpty || memcmp(kept.baseAddress!, value.baseAddress!, value.count) == 0)
        }
        return matches ? field : nil
    }

    /// Remembers `field`, built from `value`, for `slot`.
    func remember(_ field: HTTPField, slot: Int, value: UnsafeRawBufferPointer) {
        guard value.count <= Self.maximumValueBytes else {
            fields[slot] = nil
            return
        }
        values[slot].removeAll(keepingCapacity: true)
        values[slot].append(contentsOf: value)
        fields[slot] = field
    }

    /// This thread's.
    static var current: RecentFields {
        if let pointer = pthread_getspecific(key) {
            return Unmanaged<RecentFields>.fromOpaque(pointer).takeUnretainedValue()
        }
        let recent = RecentFields()
        // The key's destructor releases it when the thread exits.
        pthread_setspecific(key, Unmanaged.passRetained(recent).toOpaque())
        return recent
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<RecentFields>.fromOpaque(pointer).release() }
        }
        precondition(status == 0, "could not create the recent-fields thread key")
        return key
    }()
}
