internal import CourierCore

/// Reuses the buffers buffered bodies are received into. A fresh allocation of a 100 KB body
/// costs page faults and allocator work on every response; a buffer that comes back (when the
/// `Data` handed to the caller is released) serves the next response instead.
///
/// Bounded by bytes: buffers of ``minimumBytes`` to ``maximumBytes`` are kept while the free
/// ones add up to at most `capacity` bytes; larger ones go straight back to the system
/// (``LargeBuffer``). ``drain()``, at the transport's shutdown, frees what is kept and stops
/// keeping.
final class BodyBufferPool: Sendable {
    static let minimumBytes = 32 << 10
    static let maximumBytes = 1 << 20
    /// Free bytes kept at most.
    let capacity: Int

    private struct State {
        /// Free buffers as (address, capacity); addresses as integers so the state is plainly
        /// `Sendable` (a buffer is owned by exactly one place: this list, a transfer, or a `Data`).
        var free: [(address: Int, capacity: Int)] = []
        var freeBytes = 0
        var drained = false
    }

    private let state = LockedValue(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    deinit { drain() }

    /// The bytes kept for reuse now.
    var keptBytes: Int { state.withLock { $0.freeBytes } }

    /// A buffer of at least `size` bytes (and its capacity): a free one no more than twice as
    /// large, else a new one.
    func take(_ size: Int) -> (UnsafeMutableRawPointer, Int) {
        if size >= Self.minimumBytes, size <= Self.maximumBytes {
            let reused = state.withLock { state -> (address: Int, capacity: Int)? in
                guard let index = state.free.firstIndex(where: { $0.capacity >= size && $0.capacity <= size * 2 })
                else {
                    return nil
                }
                let buffer = state.free.remove(at: index)
                state.freeBytes -= buffer.capacity
                return buffer
            }
            if let reused, let pointer = UnsafeMutableRawPointer(bitPattern: reused.address) {
                return (pointer, reused.capacity)
            }
        }
        return LargeBuffer.allocate(size)
    }

    /// Takes a buffer back, or frees it when it is outside the pooled sizes, the pool is full
    /// or drained.
    func give(_ pointer: UnsafeMutableRawPointer, capacity: Int) {
        if capacity >= Self.minimumBytes, capacity <= Self.maximumBytes {
            let kept = state.withLock { state -> Bool in
                guard !state.drained, state.freeBytes + capacity <= self.capacity else { return false }
                state.free.append((Int(bitPattern: pointer), capacity))
                state.freeBytes += capacity
                return true
            }
            if kept { return }
        }
        LargeBuffer.deallocate(pointer, capacity: capacity)
    }

    /// Frees every kept buffer; buffers given back later are freed at once.
    func drain() {
        let released = state.withLock { state in
            state.drained = true
            state.freeBytes = 0
            defer { state.free = [] }
            return state.free
        }
        for buffer in released {
            if let pointer = UnsafeMutableRawPointer(bitPattern: buffer.address) {
                LargeBuffer.deallocate(pointer, capacity: buffer.capacity)
            }
        }
    }
}
