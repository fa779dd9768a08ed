internal import CourierCore

/// A store the fleet shares that hears the other instances' writes and removals, so that a
/// ``TieredCache`` drops its own copies of what changed (its memory and the stores in front of
/// the shared one): PostgreSQL's `LISTEN`/`NOTIFY`.
package protocol CacheCoherenceSource: Sendable {
    /// Where the store reports what another instance changed.
    var remoteChanges: RemoteChanges { get }
}

/// What another instance changed in a shared store.
package enum RemoteChange: Sendable, Equatable {
    /// It stored or removed the entry of this key. The key is nil when the notification could
    /// carry only its digest (``CacheKey/digest``; a key too long for a notification).
    case entry(digest: String, key: CacheKey?)
    /// It removed every entry.
    case all
    /// It purged what the target names (removed it, or marked it stale: either way the copies
    /// in front of the shared store go, and the next read finds the shared entry).
    case purge(PurgeTarget)
}

/// Handlers of a store's ``RemoteChange``s. Any thread may add, remove or notify.
package final class RemoteChanges: Sendable {
    private let handlers = LockedValue<(next: UInt64, all: [UInt64: @Sendable (RemoteChange) -> Void])>((0, [:]))

    package init() {}

    /// Calls `handler` with every change from now on, until ``remove(_:)`` with the returned id.
    package func add(_ handler: @escaping @Sendable (RemoteChange) -> Void) -> UInt64 {
        handlers.withLock { handlers in
            handlers.next += 1
            handlers.all[handlers.next] = handler
            return handlers.next
        }
    }

    /// Stops calling the handler `id`.
    package func remove(_ id: UInt64) { handlers.withLock { _ = $0.all.removeValue(forKey: id) } }

    /// Handlers called now.
    package var count: Int { handlers.withLock { $0.all.count } }

    /// Calls every handler with `change`.
    package func notify(_ change: RemoteChange) {
        for handler in handlers.withLock({ Array($0.all.values) }) { handler(change) }
    }
}

/// Forwards a shared store's changes to the cache that holds it, once the cache exists (a
/// handler is added in the cache's initializer, before `self` may be captured), without
/// keeping the cache alive.
final class CoherenceSink: Sendable {
    private let cache = LockedValue<WeakCache>(WeakCache())

    struct WeakCache: @unchecked Sendable {
        // Safe: only read and written under the lock of `cache`; `TieredCache` is an actor.
        weak var value: TieredCache?
    }

    func attach(_ target: TieredCache) { cache.withLock { $0.value = target } }

    /// Drops the copies in front of store `index` of what `change` names, in a task (the
    /// handler runs on the store's listener and must not wait on the cache).
    func changed(_ change: RemoteChange, below index: Int) {
        guard let target = cache.withLock({ $0.value }) else { return }
        Task { await target.dropCopies(of: change, above: index) }
    }
}

extension TieredCache {
    /// The bucket of ``remoteDrops`` a key's digest counts in: its first byte.
    static func dropBucket(_ digest: String) -> Int {
        Int(UInt8(digest.prefix(2), radix: 16) ?? 0)
    }

    /// Removes the copies of `change`'s entries (or of every entry) from the stores in front of
    /// store `index`, then from memory; reports each memory copy dropped as `invalidated`.
    /// Lookups reading a store meanwhile, or until after the drop, do not promote what they
    /// read (``dropsRunning`` in the key's bucket, or ``purgesRunning``, while it runs;
    /// ``remoteDrops`` counted at its end).
    func dropCopies(of change: RemoteChange, above index: Int) async {
        switch change {
        case .entry(let digest, _): dropsRunning[Self.dropBucket(digest)] += 1
        case .all, .purge: purgesRunning += 1
        }
        defer {
            switch change {
            case .entry(let digest, _):
                dropsRunning[Self.dropBucket(digest)] -= 1
                remoteDrops[Self.dropBucket(digest)] &+= 1
            case .all, .purge:
                purgesRunning -= 1
                for bucket in remoteDrops.indices { remoteDrops[bucket] &+= 1 }
            }
        }
        switch change {
        case .all:
            for store in stores.prefix(index) { await reporting(store) { try await $0.removeAll() } }
            memory.removeAll()
        case .purge(let target):
            for store in stores.prefix(index) {
                await reporting(store) { _ = try await Self.purge(target, soft: false, now: self.now(), in: $0) }
            }
            for key in memory.removeAll(where: { target.matches($0, $1) }) {
                observers.notify(.invalidated(key: key.description))
            }
        case .entry(let digest, let key):
            let keys = key.map { [$0] } ?? memory.keysByRecency.filter { $0.digest == digest }
            for key in keys {
                for store in stores.prefix(index) { await reporting(store) { try await $0.removeEntry(for: key) } }
                if memory.removeValue(for: key) != nil { observers.notify(.invalidated(key: key.description)) }
            }
        }
    }
}
