#if canImport(Glibc)
internal import Glibc
#endif

/// Memory for body buffers. Blocks of ``mappingThreshold`` bytes and more are pages mapped for
/// them alone and unmapped when released, so a burst of large bodies leaves nothing resident.
///
/// Why not `malloc`: glibc maps large blocks at first, but raises its threshold each time one
/// is freed (up to 32 MiB), so after a few large bodies it serves them from its heap, and heap
/// pages stay resident long after the bodies are gone (a transport that met a burst of 64 MiB
/// bodies kept over 100 MB).
enum LargeBuffer {
    static let mappingThreshold = 256 << 10
    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// A block of at least `size` bytes and its capacity. The capacity tells ``deallocate(_:capacity:)``
    /// how the block was made: mapped blocks are at least ``mappingThreshold`` bytes, others below.
    static func allocate(_ size: Int) -> (UnsafeMutableRawPointer, Int) {
        guard size >= mappingThreshold else {
            return (UnsafeMutableRawPointer.allocate(byteCount: max(size, 1), alignment: 16), size)
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
            pointer.deallocate()
        }
    }

    /// A block of at least `size` bytes holding the first `used` bytes of `pointer`, which is
    /// released.
    static func grow(
        _ pointer: UnsafeMutableRawPointer, capacity: Int, used: Int, to size: Int
    ) -> (UnsafeMutableRawPointer, Int) {
        let (grown, grownCapacity) = allocate(size)
        grown.copyMemory(from: pointer, byteCount: used)
        deallocate(pointer, capacity: capacity)
        return (grown, grownCapacity)
    }
}
