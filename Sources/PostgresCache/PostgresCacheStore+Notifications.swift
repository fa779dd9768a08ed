#if PostgreSQL
package import CourierCaching
internal import CourierCore
package import Logging
internal import PostgresNIO

/// The store's notifications: one connection of the pool listens on the store's channel
/// (``PostgresCacheTables/channel``) from the first lease the process asks for, and each
/// release of a lease is announced on it, so that the loads of the fleet waiting on the lease
/// wake at once (``CacheLeaseNotifying``).
///
/// A payload reads `lease <key digest in hex> stored|notStored`; anything else is ignored with
/// a debug log (another version may say more).
extension PostgresCacheStore: CacheLeaseNotifying {
    package func watchLease(on key: CacheKey) -> LeaseWatch {
        startListening()
        return notifications.watch(SHA256.hex(Array(Self.digest(key))))
    }

    /// Starts listening unless a listener runs: it holds one connection of the pool and takes
    /// another after a failure (a second later), until the pool shuts down or the store goes.
    package func startListening() {
        listener.withLock { task in
            guard task == nil else { return }
            task = Task { [client, notifications, channel = tables.channel, logger] in
                await Self.listen(client: client, channel: channel, notifications: notifications, logger: logger)
            }
        }
    }

    private static func listen(
        client: PostgresClient, channel: String, notifications: LeaseNotifications, logger: Logger?
    ) async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: channel) { received in
                        notifications.setListening(true)
                        for try await notification in received {
                            Self.deliver(notification.payload, to: notifications, logger: logger)
                        }
                    }
                }
            } catch {
                notifications.setListening(false)
                if (error as? PSQLError)?.code == .poolClosed || Task.isCancelled { return }
                logger?.debug(
                    "the PostgreSQL cache stopped listening; again in a second",
                    metadata: ["error": "\(String(reflecting: error))"])
            }
            notifications.setListening(false)
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Hands one notification's release to the watches of its key.
    package static func deliver(_ payload: String, to notifications: LeaseNotifications, logger: Logger?) {
        let parts = payload.split(separator: " ")
        guard parts.count == 3, parts[0] == "lease", parts[1].utf8.count == 64 else {
            logger?.debug("the PostgreSQL cache ignored a notification", metadata: ["payload": "\(payload)"])
            return
        }
        switch parts[2] {
        case "stored": notifications.released(String(parts[1]), .stored)
        case "notStored": notifications.released(String(parts[1]), .notStored)
        default: logger?.debug("the PostgreSQL cache ignored a notification", metadata: ["payload": "\(payload)"])
        }
    }
}
#endif
