internal import CourierCore

/// A leasing store that tells the loads waiting on a lease when its holder gives it back, so
/// that they need not poll (PostgreSQL's `LISTEN`/`NOTIFY`).
///
/// Notifications are a shortcut, never the only path: a load keeps polling, less often, and a
/// lost notification costs it one poll interval.
package protocol CacheLeaseNotifying: CacheLeasing {
    /// Starts watching the lease on `key`: every release from now on reaches the watch.
    func watchLease(on key: CacheKey) -> LeaseWatch
    /// Gives `lease` back, telling the waiters whether the holder got an answer (`answered`):
    /// they learn ``LeaseRelease/stored`` when an entry for the key is stored, else
    /// ``LeaseRelease/notStored`` when it got one (which could not be stored), else
    /// ``LeaseRelease/failed``.
    func releaseLease(_ lease: CacheLease, answered: Bool) async throws
}

/// What the holder of a lease left when it gave the lease back.
package enum LeaseRelease: Sendable, Equatable {
    /// An entry for the key is stored: serve it.
    case stored
    /// The holder got an answer that could not be stored (`no-store`, say): every waiter goes
    /// to the origin at once, rather than taking the lease one after another.
    case notStored
    /// The holder got no answer (its fetch failed, or was cancelled): a waiter takes the lease
    /// at once and fetches for the others.
    case failed
    /// Not a release: an entry for the key was stored or removed, the lease perhaps still
    /// held. A waiter reads the key again: the holder stores before it gives the lease back,
    /// so a waiter that serves what it stored answers one statement sooner.
    case entryChanged
}

/// One load's watch of one key's lease, from ``CacheLeaseNotifying/watchLease(on:)`` until
/// ``end()`` (or its release).
package final class LeaseWatch: Sendable {
    private let notifications: LeaseNotifications
    private let key: String
    private let id: UInt64

    fileprivate init(notifications: LeaseNotifications, key: String, id: UInt64) {
        self.notifications = notifications
        self.key = key
        self.id = id
    }

    deinit { notifications.end(key, id: id) }

    /// Whether notifications arrive now (the store listens); when not, a release goes unseen.
    package var isLive: Bool { notifications.isListening }

    /// The next release since the watch began or since the last one returned; nil when the
    /// task is cancelled or the watch ended.
    package func next() async -> LeaseRelease? {
        await notifications.next(key, id: id)
    }

    /// The next release, or nil once `timeout` passes on `clock` (or the task is cancelled).
    package func next(within timeout: Duration, on clock: any Clock<Duration>) async -> LeaseRelease? {
        await withTaskGroup(of: LeaseRelease?.self) { group in
            group.addTask { await self.next() }
            group.addTask {
                try? await clock.sleep(for: timeout)
                return nil
            }
            var release = await group.next() ?? nil
            group.cancelAll()
            // A release that reached the waiter as the sleep ended is not dropped.
            while let other = await group.next() { release = release ?? other }
            return release
        }
    }

    /// Forgets a release not read yet: called before each attempt at the lease, so that an
    /// earlier holder's release, heard late, is not taken for the next holder's.
    package func discardUnread() { notifications.discardUnread(key, id: id) }

    /// Stops watching (also when the watch is released).
    package func end() { notifications.end(key, id: id) }
}

/// The watches of one leasing store, by key, fed by its notifications: ``LeaseWatchMachine``
/// under a lock, its waiters resumed after the lock is released.
package final class LeaseNotifications: Sendable {
    private typealias Waiter = CheckedContinuation<LeaseRelease?, Never>
    private let machine = LockedValue(LeaseWatchMachine<Waiter>())
    private let listening = LockedValue(false)

    package init() {}

    /// Whether the store receives notifications now.
    package var isListening: Bool { listening.withLock { $0 } }

    /// The store started (true) or stopped (false) receiving notifications.
    package func setListening(_ isListening: Bool) {
        listening.withLock { $0 = isListening }
    }

    /// A watch of `key` (the store's own spelling of a key, as its notifications carry it).
    package func watch(_ key: String) -> LeaseWatch {
        LeaseWatch(notifications: self, key: key, id: machine.withLock { $0.add(key) })
    }

    /// `key`'s lease was released, leaving `release` (or its entry changed,
    /// ``LeaseRelease/entryChanged``): every watch of it learns so.
    package func released(_ key: String, _ release: LeaseRelease) {
        let waiters = machine.withLock { $0.notify(key, release) }
        for waiter in waiters { waiter.resume(returning: release) }
    }

    /// Watches open now, every key together.
    package var watchCount: Int { machine.withLock { $0.count } }
    /// Watches waiting for a release now, every key together (a test hook).
    package var waitingCount: Int { machine.withLock { $0.waitingCount } }

    fileprivate func next(_ key: String, id: UInt64) async -> LeaseRelease? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: Waiter) in
                let waited = machine.withLock {
                    $0.wait(key, id: id, waiter: waiter, taskIsCancelled: Task.isCancelled)
                }
                if case .now(let release) = waited { waiter.resume(returning: release) }
            }
        } onCancel: {
            machine.withLock { $0.cancelWait(key, id: id) }?.resume(returning: nil)
        }
    }

    fileprivate func discardUnread(_ key: String, id: UInt64) {
        machine.withLock { $0.discardUnread(key, id: id) }
    }

    fileprivate func end(_ key: String, id: UInt64) {
        machine.withLock { $0.remove(key, id: id) }?.resume(returning: nil)
    }
}

/// The watches of lease releases as a pure state machine: per key, per watch, either idle
/// (holding the release it has not read yet, if any) or waiting. No lock, no continuation is
/// resumed: each event returns the waiters to answer. Generic over what a waiter is, so its
/// tests use plain values.
///
/// Events: ``add(_:)`` opens a watch; ``wait(_:id:waiter:taskIsCancelled:)`` returns an unread
/// release at once or parks the waiter; ``notify(_:_:)`` answers every parked waiter of the
/// key and keeps the release for the idle ones (a release is not overwritten by a later
/// ``LeaseRelease/entryChanged``, which says less); ``discardUnread(_:id:)`` forgets it; ``cancelWait(_:id:)`` and ``remove(_:id:)``
/// hand back a parked waiter (to answer nil), once.
package struct LeaseWatchMachine<Waiter: Sendable>: Sendable {
    enum Watch: Sendable {
        /// Not waiting; the release not read yet, if any (the latest wins, except that an
        /// `entryChanged` never replaces a release).
        case idle(unread: LeaseRelease?)
        case waiting(Waiter)
    }

    private(set) var watches: [String: [UInt64: Watch]] = [:]
    private var lastID: UInt64 = 0

    package init() {}

    /// Open watches, every key together.
    package var count: Int { watches.values.reduce(0) { $0 + $1.count } }

    /// Watches waiting for a release, every key together.
    package var waitingCount: Int {
        watches.values.reduce(0) { total, keyed in
            total + keyed.values.count { if case .waiting = $0 { true } else { false } }
        }
    }

    /// Opens a watch of `key`; returns its id.
    package mutating func add(_ key: String) -> UInt64 {
        lastID += 1
        watches[key, default: [:]][lastID] = .idle(unread: nil)
        return lastID
    }

    package enum Waited: Sendable, Equatable {
        /// Answer the waiter at once with this (nil: cancelled, or the watch ended).
        case now(LeaseRelease?)
        /// The waiter is parked until a release, its cancellation or the watch's end.
        case waits
    }

    /// Watch `id` of `key` waits for the next release.
    package mutating func wait(_ key: String, id: UInt64, waiter: Waiter, taskIsCancelled: Bool) -> Waited {
        guard let watch = watches[key]?[id] else { return .now(nil) }
        switch watch {
        case .idle(let unread?):
            watches[key]?[id] = .idle(unread: nil)
            return .now(unread)
        case .idle(nil):
            if taskIsCancelled { return .now(nil) }
            watches[key]?[id] = .waiting(waiter)
            return .waits
        case .waiting:
            assertionFailure("A watch waits twice at once.")
            return .now(nil)
        }
    }

    /// Watch `id`'s waiter was cancelled: returns it (to answer nil) if it still waits.
    package mutating func cancelWait(_ key: String, id: UInt64) -> Waiter? {
        guard case .waiting(let waiter) = watches[key]?[id] else { return nil }
        watches[key]?[id] = .idle(unread: nil)
        return waiter
    }

    /// `key`'s lease was released, leaving `release`: returns the waiters to answer with it.
    package mutating func notify(_ key: String, _ release: LeaseRelease) -> [Waiter] {
        guard let keyed = watches[key] else { return [] }
        var waiters: [Waiter] = []
        var updated = keyed
        for (id, watch) in keyed {
            switch watch {
            case .waiting(let waiter):
                waiters.append(waiter)
                updated[id] = .idle(unread: nil)
            case .idle(let unread?) where release == .entryChanged:
                updated[id] = .idle(unread: unread)  // the release says more: whether to read, fetch or lease
            case .idle:
                updated[id] = .idle(unread: release)
            }
        }
        watches[key] = updated
        return waiters
    }

    /// Forgets watch `id`'s unread release, if any.
    package mutating func discardUnread(_ key: String, id: UInt64) {
        if case .idle(_?) = watches[key]?[id] { watches[key]?[id] = .idle(unread: nil) }
    }

    /// Ends watch `id`: returns its waiter (to answer nil) if it waits.
    package mutating func remove(_ key: String, id: UInt64) -> Waiter? {
        guard let watch = watches[key]?.removeValue(forKey: id) else { return nil }
        if watches[key]?.isEmpty == true { watches[key] = nil }
        if case .waiting(let waiter) = watch { return waiter }
        return nil
    }
}
