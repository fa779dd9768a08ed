#if PostgreSQL
internal import CourierCore
internal import PostgresNIO

extension PostgresCacheStore {
    /// Adds `bytes` to those stored since the last check of the bound; true when a check is due
    /// (the count then starts again).
    func noteStored(bytes: Int) -> Bool {
        guard let interval = configuration.resolvedEvictionCheckInterval else { return false }
        return bytesSinceEvictionCheck.withLock { total in
            total += bytes
            guard total >= interval else { return false }
            total = 0
            return true
        }
    }

    /// Starts ``evictLeastRecentlyUsed()`` in a task of its own unless one runs: a write never
    /// waits for an eviction (whose batches may take longer than a call's bound on a large table).
    func evictInBackground() {
        let starts = evicting.withLock { running in
            defer { running = true }
            return !running
        }
        guard starts else { return }
        Task {
            defer { self.evicting.withLock { $0 = false } }
            do throws(ServiceError) {
                try await self.evictLeastRecentlyUsed()
            } catch {
                // The next check tries again; until one succeeds the bound does not hold.
                self.logger?.warning(
                    "eviction failed", metadata: ["courier.error.code": "\(error.code)", "courier.error": "\(error)"])
            }
        }
    }

    /// Returns once no background eviction runs (or after `timeout`): a test hook.
    package func waitForEvictions(timeout: Duration = .seconds(30)) async {
        let started = ContinuousClock.now
        while evicting.withLock({ $0 }), ContinuousClock.now - started < timeout {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Removes the least recently used rows until the rest fit in ``Configuration/maximumBytes``:
    /// one statement sums the sizes (from the index on last access), then each batch removes
    /// the oldest rows, at most ``Configuration/evictionBatchSize``, that the excess still
    /// covers, read from that index in order. Each statement is a call bounded by
    /// ``Configuration/evictionTimeout``. A batch costs the same on a table of a thousand rows
    /// or of millions; the sum grows with the rows, but reads only the index (all of it when
    /// vacuum has kept up, some of the table too when not). What was removed is an `evicted`
    /// event of the store's observers, also when a later batch fails. Returns the rows and
    /// bytes removed.
    ///
    /// Processes of a fleet evict on their own: two evicting at once may each remove the same
    /// excess, so the table may end up to one check interval per process under the bound.
    @discardableResult
    package func evictLeastRecentlyUsed() async throws(ServiceError) -> (count: Int, bytes: Int) {
        guard let maximum = configuration.maximumBytes else { return (0, 0) }
        let batch = max(1, configuration.evictionBatchSize)
        let limit = configuration.evictionTimeout
        let total = try await call("an eviction's size check", limit: limit, background: true) { store in
            try await store.client.query(
                "SELECT coalesce(sum(size), 0)::int8 FROM \(unescaped: store.tables.entries)",
                logger: store.queryLogger
            ).decode(Int64.self).reduce(into: Int64(0)) { $0 += $1 }
        }
        var excess = total - Int64(maximum)
        var removed = (count: 0, bytes: 0)
        defer {
            if removed.count > 0 { observers.notify(.evicted(.shared, count: removed.count, bytes: removed.bytes)) }
        }
        while excess > 0 {
            let covering = excess
            // The oldest rows of the batch whose older neighbours' bytes still fall short of the
            // excess: exactly those needed, within the batch.
            let sizes = try await call("an eviction", limit: limit, background: true) { store in
                try await store.client.query(
                    """
                    DELETE FROM \(unescaped: store.tables.entries) WHERE key_digest IN (
                        SELECT key_digest FROM (
                            SELECT key_digest,
                                sum(size) OVER (ORDER BY last_access, key_digest) - size AS older_bytes
                            FROM (
                                SELECT key_digest, size, last_access FROM \(unescaped: store.tables.entries)
                                ORDER BY last_access, key_digest
                                LIMIT \(Int64(batch))
                            ) oldest
                        ) ranked
                        WHERE older_bytes < \(covering))
                    RETURNING size
                    """,
                    logger: store.queryLogger
                ).decode(Int64.self).reduce(into: [Int64]()) { $0.append($1) }
            }
            guard !sizes.isEmpty else { break }  // another process emptied the table meanwhile
            removed.count += sizes.count
            removed.bytes += Int(sizes.reduce(0, +))
            excess -= sizes.reduce(0, +)
        }
        return removed
    }
}
#endif
