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
/// It also keeps the last head: a head whose fields are those of the last one, in the same
/// order, with the same bytes (but for a `Date`), starts from the last head's `HTTPFields` and
/// replaces only what changed, instead of inserting every field (some 400 instructions each).
///
/// One per thread, in a ``LoopBound`` bound to that thread and reached through a thread-specific
/// key, so no lock: a thread parses one head at a time (a parser that finds another began on
/// its thread meanwhile stops using it, and one that finds itself on another thread leaves it
/// alone; in debug builds the box traps on any access off its thread).
/// Bounded: one value of at most ``maximumValueBytes`` per name and per field of the last
/// head (of at most ``maximumHeadFields``), their buffers reused. Only common fields that carry
/// no secret are kept (not `Set-Cookie`, not `Location`), and only heads made of them.
struct RecentFields {
    static let maximumValueBytes = 128
    /// A head with more fields is not kept as the last head.
    static let maximumHeadFields = 32

    private var values: [[UInt8]]
    private var fields: [HTTPField?]

    fileprivate init() {
        values = Array(repeating: [], count: ResponseHeadParser.recentSlots)
        fields = Array(repeating: nil, count: ResponseHeadParser.recentSlots)
    }

    /// The field last built for `slot` if its value had exactly these bytes.
    func field(slot: Int, value: UnsafeRawBufferPointer) -> HTTPField? {
        guard let field = fields[slot] else { return nil }
        let matches = values[slot].withUnsafeBytes { kept in
            kept.count == value.count
                && (value.isEmpty || memcmp(kept.baseAddress!, value.baseAddress!, value.count) == 0)
        }
        return matches ? field : nil
    }

    /// Remembers `field`, built from `value`, for `slot`.
    mutating func remember(_ field: HTTPField, slot: Int, value: UnsafeRawBufferPointer) {
        guard value.count <= Self.maximumValueBytes else {
            fields[slot] = nil
            return
        }
        values[slot].removeAll(keepingCapacity: true)
        values[slot].append(contentsOf: value)
        fields[slot] = field
    }

    // MARK: the last head

    /// The last head completed on this thread, and for each of its fields the common-name slot
    /// and value bytes it was built from (slot -1: nothing to match). Invariant: where
    /// `headSlots[i] >= 0`, `head[i]` is the field of that slot's name and `headValues[i]`.
    private var head = HTTPFields()
    private var headSlots: [Int] = []
    private var headValues: [[UInt8]] = []
    /// The fields of the head being parsed that differ from the last head's, waiting for it to
    /// complete: their index, slot and bytes (in `stagedBytes`).
    private var staged: [(index: Int, slot: Int, start: Int, count: Int)] = []
    private var stagedBytes: [UInt8] = []
    /// False once the head being parsed has a field the cache must not keep (a value over
    /// ``maximumValueBytes``, or a `Set-Cookie`): it will not become the last head.
    private var stagedHeadIsKept = true
    /// Which head is being parsed: a parser whose number is no longer current (another parser
    /// began on this thread meanwhile) matches nothing and commits nothing.
    private var generation = 0

    /// Starts a head: its number, and the last head's fields to build it on.
    mutating func beginHead() -> (generation: Int, fields: HTTPFields) {
        generation &+= 1
        staged.removeAll(keepingCapacity: true)
        stagedBytes.removeAll(keepingCapacity: true)
        stagedHeadIsKept = true
        return (generation, head)
    }

    /// Whether field `index` of the last head was built from `slot` and exactly these bytes.
    func lastHead(_ generation: Int, matches slot: Int, value: UnsafeRawBufferPointer, at index: Int) -> Bool {
        guard generation == self.generation, index < headSlots.count, headSlots[index] == slot else { return false }
        return headValues[index].withUnsafeBytes { kept in
            kept.count == value.count
                && (value.isEmpty || memcmp(kept.baseAddress!, value.baseAddress!, value.count) == 0)
        }
    }

    /// Field `index` of the head being parsed differs from the last head's: it matches nothing
    /// from now on, and takes `slot` (nil: not a common name) and `value` if the head completes.
    /// `keepsHead` false: the head must not be kept (its field may carry a secret).
    mutating func stage(_ generation: Int, index: Int, slot: Int?, value: UnsafeRawBufferPointer, keepsHead: Bool) {
        if index < headSlots.count { headSlots[index] = -1 }
        guard generation == self.generation else { return }
        if !keepsHead || value.count > Self.maximumValueBytes { stagedHeadIsKept = false }
        if let slot, value.count <= Self.maximumValueBytes {
            staged.append((index, slot, stagedBytes.count, value.count))
            stagedBytes.append(contentsOf: value)
        } else {
            staged.append((index, -1, 0, 0))
        }
    }

    /// The head numbered `generation` completed with `fields`: it becomes the last head.
    mutating func commitHead(_ generation: Int, fields: HTTPFields) {
        guard generation == self.generation else { return }
        guard stagedHeadIsKept, fields.count <= Self.maximumHeadFields else {
            // Not kept: nothing of it stays, and nothing matches until the next kept head.
            head = HTTPFields()
            headSlots.removeAll(keepingCapacity: true)
            headValues.removeAll()
            self.generation &+= 1
            return
        }
        if headSlots.count > fields.count {
            headSlots.removeLast(headSlots.count - fields.count)
            headValues.removeLast(headValues.count - fields.count)
        }
        while headSlots.count < fields.count {
            headSlots.append(-1)
            headValues.append([])
        }
        for change in staged {
            headSlots[change.index] = change.slot
            headValues[change.index].removeAll(keepingCapacity: true)
            if change.slot >= 0 {
                headValues[change.index].append(contentsOf: stagedBytes[change.start..<change.start + change.count])
            }
        }
        head = fields
        self.generation &+= 1
    }

    /// This thread's, bound to it.
    static var current: LoopBound<RecentFields> {
        if let pointer = pthread_getspecific(key) {
            return Unmanaged<LoopBound<RecentFields>>.fromOpaque(pointer).takeUnretainedValue()
        }
        let recent = LoopBound(RecentFields())
        recent.bindToCurrentThread()
        // The key's destructor releases it when the thread exits.
        pthread_setspecific(key, Unmanaged.passRetained(recent).toOpaque())
        return recent
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<LoopBound<RecentFields>>.fromOpaque(pointer).release() }
        }
        precondition(status == 0, "could not create the recent-fields thread key")
        return key
    }()
}
