import Testing

@testable import CourierTransport

#if canImport(Glibc)
import Glibc
#endif

/// ``LoopBound``: the loop's state is touched on its own thread only, never in overlapping
/// accesses, and debug builds (the tests') trap on either.
// Serialized: each exit test runs a copy of the test process; two at once on 2 cores only
// slowed the rest of the suite.
@Suite("Loop-bound state: one thread, checked", .serialized)
struct LoopBoundTests {
    /// Runs `body` on a new thread and waits for it.
    static func onAnotherThread(_ body: @escaping () -> Void) {
        final class Box {
            let body: () -> Void
            init(_ body: @escaping () -> Void) { self.body = body }
        }
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let status = pthread_create(
            &thread, nil,
            { argument in
                Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue().body()
                return nil
            }, box)
        precondition(status == 0)
        pthread_join(thread, nil)
    }

    @Test func theSettingUpThreadAndThenTheOwnerUseTheValue() {
        let bound = LoopBound([1])
        bound.value.append(2)  // before binding: whoever sets the loop up
        Self.onAnotherThread {
            bound.bindToCurrentThread()
            bound.value.append(3)
            bound.unbind()
        }
        #expect(bound.value == [1, 2, 3])  // after unbinding: whoever tears it down
    }

    #if DEBUG
    @Test func anAccessOffTheOwningThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let bound = LoopBound(0)
            LoopBoundTests.onAnotherThread { bound.bindToCurrentThread() }
            bound.value += 1
        }
    }

    @Test func anOverlappingAccessTraps() async {
        await #expect(processExitsWith: .failure) {
            let bound = LoopBound([1, 2])
            bound.value.withUnsafeMutableBufferPointer { _ in _ = bound.value.count }
        }
    }
    #endif
}
