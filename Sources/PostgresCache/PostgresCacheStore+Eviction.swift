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
                // The next check tries again.
                self.logger?.debug("eviction failed", metadata: ["courier.error.code": "\(error.code)"])
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

    /// Removes the least recently used rows until the rest fit in
    /// ``Configuration/maximumBytes``, ``Configuration/evictionBatchSize`` rows per statement (each
    /// statement a bounded call). Returns the rows and bytes removed.
    @discardableResult
    package func evictLeastRecentlyUsed() async throws(ServiceError) -> (count: Int, bytes: Int) {
        guard let maximum = configuration.maximumBytes else { return (0, 0) }
        let batch = max(1, configuration.evictionBatchSize)
        var removed = (count: 0, bytes: 0)
        while true {
            // Rows ranked newest first: those whose running total passes the bound are the oldest.
            let sizes = try await call("an eviction") { store in
                try await store.client.query(
                    """
                    DELETE FROM courier_cache_entries WHERE key_digest IN (
                        SELECT key_digest FROM (
                            SELECT key_digest, last_access,
                                sum(size) OVER (ORDER BY last_access DESC, key_digest DESC) AS newer_bytes
                            FROM courier_cache_entries
                        ) ranked
                        WHERE newer_bytes > \(Int64(maximum))
                        ORDER BY last_access ASC
                        LIMIT \(Int64(batch)))
                    RETURNING size
                    """,
                    logger: store.queryLogger
                ).decode(Int64.self).reduce(into: [Int64]()) { $0.append($1) }
            }
            removed.count += sizes.count
            removed.bytes += Int(sizes.reduce(0, +))
            if sizes.count < batch { return removed }
        }
    }
}
#endif
