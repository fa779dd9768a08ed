#if canImport(Glibc)
internal import Glibc
#endif

/// Memory for body buffers. Blocks of ``mappingThreshold`` bytes and more are pages mapped for
/// them alone and unmapped when released, so a burst of large bodies leaves nothing resident.
///
/// Why not `malloc`: glibc maps large blocks at first, but raises its threshold each time one
/// is freed (up to 32 MiB), so after a few large bodies it serves them from its heap, and heap
/// pages stay resident long after the bodies are gone (a transport that met a burst of 64 MiB
/// bodies kept over 100 MB). Smaller blocks come from `malloc`, so that ``grow(_:capacity:used:to:)``
/// and ``trim(_:capacity:to:)`` can `realloc` them (in place when the heap allows).
enum LargeBuffer {
    static let mappingThreshold = 256 << 10
    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// A block of at least `size` bytes and its capacity. The capacity tells ``deallocate(_:capacity:)``
    /// how the block was made: mapped blocks are at least ``mappingThreshold`` bytes, others below.
    static func allocate(_ size: Int) -> (UnsafeMutableRawPointer, Int) {
        guard size >= mappingThreshold else {
            return (heapBlock(malloc(max(size, 1)), size), size)
        }
        let capacity = (size + pageSize - 1) / pageSize * pageSize
        guard let mapped = mmap(nil, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            mapped != MAP_FAILED
        else {
            // Out of address space: the allocator's failure mode is the same as malloc's.
            preconditionFailure("mmap of \(capacity) bytes failed (errno \(errno))")
        }
        return (mapped, capacity)
    }

    /// Releases a block made by ``allocate(_:)``.
    static func deallocate(_ pointer: UnsafeMutableRawPointer, capacity: Int) {
        if capacity >= mappingThreshold {
            munmap(pointer, capacity)
        } else {
            free(pointer)
        }
    }

    /// A block of at least `size` bytes holding the first `used` bytes of `pointer`, which is
    /// released. A heap block that stays one is `realloc`ed (no copy when it can grow in place).
    static func grow(
        _ pointer: UnsafeMutableRawPointer, capacity: Int, used: Int, to size: Int
    ) -> (UnsafeMutableRawPointer, Int) {
        if capacity < mappingThreshold, size < mappingThreshold {
            return (heapBlock(realloc(pointer, max(size, 1)), size), size)
        }
        let (grown, grownCapacity) = allocate(size)
        grown.copyMemory(from: pointer, byteCount: used)
        deallocate(pointer, capacity: capacity)
        return (grown, grownCapacity)
    }

    /// The block holding the first `used` bytes of `pointer` with little room to spare: a heap
    /// block with more than an eighth of `used` (at least ``trimmedSlack``) to spare is shrunk
    /// (in place: glibc splits it), so that a body kept for long (in a cache) holds no more than
    /// it needs. A mapped block is kept whole: its pages past `used` were never written, so they
    /// hold no memory.
    static func trim(
        _ pointer: UnsafeMutableRawPointer, capacity: Int, to used: Int
    ) -> (UnsafeMutableRawPointer, Int) {
        guard capacity < mappingThreshold, capacity - used > max(used / 8, trimmedSlack) else {
            return (pointer, capacity)
        }
        return (heapBlock(realloc(pointer, max(used, 1)), used), max(used, 1))
    }

    /// The spare bytes a heap block may always keep past what it holds.
    static let trimmedSlack = 4 << 10

    private static func heapBlock(_ pointer: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer {
        // Out of memory: the allocator's failure mode is the same as Swift's own allocations'.
        guard let pointer else { preconditionFailure("malloc of \(size) bytes failed") }
        return pointer
    }
}
