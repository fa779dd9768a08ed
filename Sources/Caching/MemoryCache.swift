package import FoundationEssentials

/// A least-recently-used cache bounded by total cost and by count, with O(1) get, set and
/// eviction (a dictionary into a doubly linked list kept in one array).
///
/// It is a plain value with no locking of its own: ``TieredCache`` owns one inside its actor, so
/// a memory hit costs one actor hop. Use it the same way inside your own actor or lock.
public struct MemoryCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// The bounds of a memory cache.
    public struct Limits: Sendable, Hashable {
        /// The most total cost (bytes) kept.
        public var totalCost: Int
        /// The most entries kept.
        public var count: Int
        /// An entry costing more than this fraction of `totalCost` is not kept at all, so one
        /// large body cannot flush everything else.
        public var largestEntryFraction: Double

        /// Creates limits (defaults: 32 MiB, 10,000 entries, entries up to 1/8 of the cost limit).
        public init(totalCost: Int = 32 << 20, count: Int = 10_000, largestEntryFraction: Double = 0.125) {
            self.totalCost = totalCost
            self.count = count
            self.largestEntryFraction = largestEntryFraction
        }
    }

    private struct Node: Sendable {
        var key: Key?
        var value: Value?
        var cost: Int
        var expiresAt: Date?
        var newer: Int  // towards the most recently used; -1 at the head
        var older: Int  // towards the least recently used; -1 at the tail
    }

    /// The bounds in force.
    package let limits: Limits
    private var nodes: [Node] = []
    private var free: [Int] = []
    private var index: [Key: Int] = [:]
    private var newest = -1
    private var oldest = -1
    /// The total cost of the entries held.
    package private(set) var totalCost = 0

    /// Creates an empty cache.
    package init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Entries held.
    package var count: Int { index.count }

    /// The value for `key` when present and not expired at `now`; marks it most recently used.
    /// An expired entry is removed.
    package mutating func value(for key: Key, now: @autoclosure () -> Date? = nil) -> Value? {
        guard let slot = index[key] else { return nil }
        if let expiry = nodes[slot].expiresAt, let now = now(), expiry <= now {
            remove(slot: slot)
            return nil
        }
        moveToFront(slot)
        return nodes[slot].value
    }

    /// The value for `key`, without touching its recency or expiry.
    package func peek(_ key: Key) -> Value? { index[key].flatMap { nodes[$0].value } }

    /// Whether `key` is held (without touching its recency or expiry).
    package func contains(_ key: Key) -> Bool { index[key] != nil }

    /// Stores `value`, evicting the least recently used entries while over a limit. Returns
    /// whether it was kept and what was evicted (a replaced value is not counted). An entry too
    /// large for the limits is not kept, and any older value for `key` is removed.
    @discardableResult
    package mutating func setValue(
        _ value: Value, for key: Key, cost: Int, expiresAt: Date? = nil
    ) -> (kept: Bool, count: Int, cost: Int) {
        let largest = Double(limits.totalCost) * limits.largestEntryFraction
        let existing = index[key]
        guard Double(cost) <= largest, cost <= limits.totalCost, limits.count > 0 else {
            if let existing { remove(slot: existing) }
            return (false, 0, 0)
        }
        let slot: Int
        if let existing {
            slot = existing
            totalCost += cost - nodes[slot].cost
            nodes[slot].value = value
            nodes[slot].cost = cost
            nodes[slot].expiresAt = expiresAt
            moveToFront(slot)
        } else {
            let node = Node(key: key, value: value, cost: cost, expiresAt: expiresAt, newer: -1, older: newest)
            if let reused = free.popLast() {
                slot = reused
                nodes[slot] = node
            } else {
                slot = nodes.count
                nodes.append(node)
            }
            if newest >= 0 { nodes[newest].newer = slot }
            newest = slot
            if oldest < 0 { oldest = slot }
            index[key] = slot
            totalCost += cost
        }
        var evicted = (count: 0, cost: 0)
        while oldest != slot && (totalCost > limits.totalCost || index.count > limits.count) {
            evicted.count += 1
            evicted.cost += nodes[oldest].cost
            remove(slot: oldest)
        }
        return (true, evicted.count, evicted.cost)
    }

    /// Removes the entry for `key`; returns its value.
    @discardableResult
    package mutating func removeValue(for key: Key) -> Value? {
        guard let slot = index[key] else { return nil }
        let value = nodes[slot].value
        remove(slot: slot)
        return value
    }

    /// Removes entries expired at `now`; returns how many.
    @discardableResult
    package mutating func removeExpired(now: Date) -> Int {
        let expired = index.values.filter { slot in nodes[slot].expiresAt.map { $0 <= now } ?? false }
        for slot in expired { remove(slot: slot) }
        return expired.count
    }

    /// Removes the entries `condition` names (without touching the others' recency); returns
    /// their keys.
    @discardableResult
    package mutating func removeAll(where condition: (Key, Value) -> Bool) -> [Key] {
        let named = index.filter { key, slot in nodes[slot].value.map { condition(key, $0) } ?? false }
        for slot in named.values { remove(slot: slot) }
        return Array(named.keys)
    }

    /// Replaces in place the values `transform` returns a new value for (recency, cost and
    /// expiry unchanged); returns how many.
    @discardableResult
    package mutating func update(_ transform: (Key, Value) -> Value?) -> Int {
        var updated = 0
        for (key, slot) in index {
            guard let value = nodes[slot].value, let new = transform(key, value) else { continue }
            nodes[slot].value = new
            updated += 1
        }
        return updated
    }

    /// Removes everything.
    package mutating func removeAll() {
        nodes.removeAll()
        free.removeAll()
        index.removeAll()
        newest = -1
        oldest = -1
        totalCost = 0
    }

    /// Keys from the most to the least recently used (for tests and diagnostics).
    package var keysByRecency: [Key] {
        var keys: [Key] = []
        var slot = newest
        while slot >= 0 {
            if let key = nodes[slot].key { keys.append(key) }
            slot = nodes[slot].older
        }
        return keys
    }

    private mutating func unlink(_ slot: Int) {
        let (newer, older) = (nodes[slot].newer, nodes[slot].older)
        if newer >= 0 { nodes[newer].older = older } else { newest = older }
        if older >= 0 { nodes[older].newer = newer } else { oldest = newer }
    }

    private mutating func moveToFront(_ slot: Int) {
        guard newest != slot else { return }
        unlink(slot)
        nodes[slot].older = newest
        nodes[slot].newer = -1
        if newest >= 0 { nodes[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }

    private mutating func remove(slot: Int) {
        unlink(slot)
        if let key = nodes[slot].key { index[key] = nil }
        totalCost -= nodes[slot].cost
        nodes[slot] = Node(key: nil, value: nil, cost: 0, expiresAt: nil, newer: -1, older: -1)
        free.append(slot)
    }
}
