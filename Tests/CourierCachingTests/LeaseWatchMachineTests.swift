import CourierCaching
import Testing

@Suite("Lease watch machine")
struct LeaseWatchMachineTests {
    typealias Machine = LeaseWatchMachine<String>

    @Test func aReleaseAnswersEveryWaiterOfItsKeyOnly() {
        var machine = Machine()
        let a = machine.add("k")
        let b = machine.add("k")
        let other = machine.add("other")
        #expect(machine.wait("k", id: a, waiter: "a", taskIsCancelled: false) == .waits)
        #expect(machine.wait("k", id: b, waiter: "b", taskIsCancelled: false) == .waits)
        #expect(machine.wait("other", id: other, waiter: "o", taskIsCancelled: false) == .waits)
        #expect(machine.waitingCount == 3)
        #expect(machine.notify("k", .notStored).sorted() == ["a", "b"])
        #expect(machine.waitingCount == 1 && machine.count == 3)
        // Answered once: nothing is left to cancel or end.
        #expect(machine.cancelWait("k", id: a) == nil)
        #expect(machine.remove("k", id: b) == nil)
        #expect(machine.remove("other", id: other) == "o")
        #expect(machine.notify("missing", .stored).isEmpty)
    }

    @Test func aReleaseBeforeTheWaitIsKeptAndReadOnce() {
        var machine = Machine()
        let id = machine.add("k")
        #expect(machine.notify("k", .notStored).isEmpty)
        #expect(machine.notify("k", .stored).isEmpty)  // the latest wins
        #expect(machine.wait("k", id: id, waiter: "w", taskIsCancelled: false) == .now(.stored))
        #expect(machine.wait("k", id: id, waiter: "w", taskIsCancelled: false) == .waits)
        #expect(machine.notify("k", .notStored) == ["w"])
        // An unread release is forgotten before the next attempt at the lease.
        #expect(machine.notify("k", .failed).isEmpty)
        machine.discardUnread("k", id: id)
        #expect(machine.wait("k", id: id, waiter: "w", taskIsCancelled: false) == .waits)
        machine.discardUnread("k", id: id)  // a parked waiter stays parked
        #expect(machine.notify("k", .stored) == ["w"])
    }

    @Test func anEntryChangeWakesAWaiterButNeverHidesARelease() {
        var machine = Machine()
        let id = machine.add("k")
        #expect(machine.wait("k", id: id, waiter: "w", taskIsCancelled: false) == .waits)
        #expect(machine.notify("k", .entryChanged) == ["w"])
        // Unread: a release is kept over a later entry change, and replaces an earlier one.
        #expect(machine.notify("k", .notStored).isEmpty)
        #expect(machine.notify("k", .entryChanged).isEmpty)
        #expect(machine.wait("k", id: id, waiter: "w", taskIsCancelled: false) == .now(.notStored))
        #expect(machine.notify("k", .entryChanged).isEmpty)
        #expect(machine.notify("k", .failed).isEmpty)
        #expect(machine.wait("k", id: id, waiter: "w", taskIsCancelled: false) == .now(.failed))
        #expect(machine.notify("k", .entryChanged).isEmpty)
        #expect(machine.wait("k", id: id, waiter: "w", taskIsCancelled: false) == .now(.entryChanged))
    }

    @Test func cancellationAndEndAnswerAParkedWaiterOnce() {
        var machine = Machine()
        let id = machine.add("k")
        #expect(machine.wait("k", id: id, waiter: "w", taskIsCancelled: true) == .now(nil))
        #expect(machine.wait("k", id: id, waiter: "w", taskIsCancelled: false) == .waits)
        #expect(machine.cancelWait("k", id: id) == "w")
        #expect(machine.cancelWait("k", id: id) == nil)
        // The watch still hears releases after a cancelled wait.
        #expect(machine.notify("k", .stored).isEmpty)
        #expect(machine.wait("k", id: id, waiter: "w", taskIsCancelled: false) == .now(.stored))
        #expect(machine.wait("k", id: id, waiter: "w2", taskIsCancelled: false) == .waits)
        #expect(machine.remove("k", id: id) == "w2")
        #expect(machine.count == 0)
        // An ended watch answers nil at once and hears nothing.
        #expect(machine.wait("k", id: id, waiter: "late", taskIsCancelled: false) == .now(nil))
        #expect(machine.notify("k", .stored).isEmpty)
        #expect(machine.count == 0)
    }

    @Test func watchesWakeThroughTheClassAndEndWithTheirWatch() async {
        let notifications = LeaseNotifications()
        let watch = notifications.watch("k")
        let waiting = Task { await watch.next(within: .seconds(10), on: ContinuousClock()) }
        while notifications.waitingCount == 0 { await Task.yield() }  // parked
        notifications.released("k", .stored)
        #expect(await waiting.value == .stored)
        let cancelled = Task { await watch.next(within: .seconds(60), on: ContinuousClock()) }
        cancelled.cancel()
        #expect(await cancelled.value == nil)
        #expect(await watch.next(within: .milliseconds(10), on: ContinuousClock()) == nil)
        watch.end()
        #expect(notifications.watchCount == 0)
        #expect(await watch.next(within: .seconds(10), on: ContinuousClock()) == nil)
    }

}
