internal import Synchronization

/// Reuses the large buffers buffered bodies are received into. A fresh allocation of a
/// 100 KB body costs page faults and allocator work on every response; a buffer that comes
/// back (when the `Data` handed to the caller is released) serves the next response instead.
/// Bounded: at most `maximumCount` buffers of at most `maximumBytes` each are kept.
final class BodyBufferPool: Sendable {
    static let minimumBytes = 32 << 10
    let maximumCount: Int
    let maximumBytes: Int

    /// Free buffers as (address, capacity); addresses as integers so the state is plainly
    /// `Sendable` (a buffer is owned by exactly one place: this list, a transfer, or a `Data`).
    private let free = Mutex<[(address: Int, capacity: Int)]>([])

    init(maximumCount: Int = 64, maximumBytes: Int = 4 << 20) {
        self.maximumCount = maximumCount
        self.maximumBytes = maximumBytes
    }

    deinit {
        free.withLock { buffers in
            for buffer in buffers { UnsafeMutableRawPointer(bitPattern: buffer.address)?.deallocate() }
        }
    }

    /// A buffer of at least `size` bytes (and its capacity): a free one no more than twice as
    /// large, else a new one.
    func take(_ size: Int) -> (UnsafeMutableRawPointer, Int) {
        if size >= Self.minimumBytes, size <= maximumBytes {
            let reused = free.withLock { buffers -> (address: Int, capacity: Int)? in
                guard let index = buffers.firstIndex(where: { $0.capacity >= size && $0.capacity <= size * 2 }) else {
                    return nil
                }
                return buffers.remove(at: index)
            }
            if let reused, let pointer = UnsafeMutableRawPointer(bitPattern: reused.address) {
                return (pointer, reused.capacity)
            }
        }
        return (UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16), size)
    }

    /// Takes a buffer back (or frees it when the pool is full or it is not worth keeping).
    func give(_ pointer: UnsafeMutableRawPointer, capacity: Int) {
        if capacity >= Self.minimumBytes, capacity <= maximumBytes {
            let kept = free.withLock { buffers -> Bool in
                guard buffers.count < maximumCount else { return false }
                buffers.append((Int(bitPattern: pointer), capacity))
                return true
            }
            if kept { return }
        }
        pointer.deallocate()
    }
}
