#if PostgreSQL
package import CourierCaching
internal import CourierCore
package import Logging
internal import PostgresNIO

/// The store's notifications, on its channel (``PostgresCacheTables/channel``), which one
/// connection of the pool listens on from the store's first call (when
/// ``Configuration/notifications`` is on):
///
/// - `lease <key digest> stored|notStored`: a lease was given back, with or without an entry
///   stored for its key; the fleet's loads waiting on it wake at once (``CacheLeaseNotifying``).
/// - `entry <instance> <key digest> [<key>]`: an instance stored or removed an entry; the others'
///   ``TieredCache``s drop their own copies (``CacheCoherenceSource``), and the loads waiting on
///   the key's lease read it again (``LeaseRelease/entryChanged``): they answer as soon as the
///   holder stores, one statement before it gives the lease back. (A read that overlaps the
///   drop is served but not copied to memory; the next one is.) The key is left out when
///   it would not fit a notification (8,000 bytes).
/// - `all <instance>`: an instance removed every entry.
/// - `purge <instance> hard|soft url <url>` (or `urlDigest <hex>`, or `tag <tag>`): an
///   instance purged what the URL or tag names; the others drop their own copies
///   (``TieredCache/purge(url:soft:)``).
///
/// When the listener connects again after losing its connection, it may have missed any of
/// these: the caches holding the store then drop every copy in front of it (as for `all`), and
/// read the shared tier again. The purges this instance could not announce meanwhile are
/// applied then (``PendingPurges``).
///
/// Anything else is ignored with a debug log (another version may say more), and so is what
/// this store announced itself.
extension PostgresCacheStore: CacheLeaseNotifying {
    package func watchLease(on key: CacheKey) -> LeaseWatch {
        startListening()
        return notifications.watch(SHA256.hex(Array(Self.digest(key))))
    }

    /// The announcement of a write or removal of `key`'s entry.
    func entryAnnouncement(_ key: CacheKey) -> String {
        let head = "entry \(instance) \(key.digest)"
        return key.rawValue.utf8.count <= 7_800 ? head + " " + key.rawValue : head
    }

    /// Starts listening unless a listener runs (or notifications are off, or the schema's name
    /// is refused): it holds one connection of the pool and takes another after a failure (a
    /// second later), until ``run()`` returns, the pool shuts down, or the store goes.
    package func startListening() {
        guard listens else { return }
        listener.withLock { task in
            guard task == nil else { return }
            let listening = Listening(
                notifications: notifications, remoteChanges: remoteChanges, instance: instance, logger: logger,
                reconnected: { [weak self] in self?.applyWaitingPurgesInBackground() })
            task = Task { [client, channel = tables.channel] in
                await Self.listen(client: client, channel: channel, listening)
            }
        }
    }

    /// Where the listener hands what it hears (not the store: the listener must not keep it alive).
    package struct Listening: Sendable {
        let notifications: LeaseNotifications
        let remoteChanges: RemoteChanges
        let instance: String
        let logger: Logger?
        /// Called when the listener connects again after losing its connection.
        let reconnected: @Sendable () -> Void

        package init(
            notifications: LeaseNotifications, remoteChanges: RemoteChanges, instance: String, logger: Logger? = nil,
            reconnected: @escaping @Sendable () -> Void = {}
        ) {
            self.notifications = notifications
            self.remoteChanges = remoteChanges
            self.instance = instance
            self.logger = logger
            self.reconnected = reconnected
        }
    }

    private static func listen(client: PostgresClient, channel: String, _ listening: Listening) async {
        let notifications = listening.notifications
        let logger = listening.logger
        let listenedBefore = LockedValue(false)
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: channel) { received in
                        notifications.setListening(true)
                        // Listening again: what was announced meanwhile went unheard.
                        if listenedBefore.withLock({ before in
                            defer { before = true }
                            return before
                        }) {
                            listening.remoteChanges.notify(.all)
                            listening.reconnected()
                        }
                        for try await notification in received {
                            Self.deliver(notification.payload, to: listening)
                        }
                    }
                }
            } catch {
                notifications.setListening(false)
                if Task.isCancelled || isShutDown(error) { return }
                logger?.debug(
                    "the PostgreSQL cache stopped listening; again in a second",
                    metadata: ["error": "\(String(reflecting: error))"])
            }
            notifications.setListening(false)
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Whether `error` says the pool shut down (postgres-nio reports it as its pool module's
    /// `ConnectionPoolError.poolShutdown`, or as `PSQLError.poolClosed`).
    static func isShutDown(_ error: any Error) -> Bool {
        if (error as? PSQLError)?.code == .poolClosed { return true }
        return String(reflecting: type(of: error)).hasSuffix("ConnectionPoolError") && "\(error)".contains("Shutdown")
    }

    /// Whether a listener task runs (a test hook).
    package var hasListener: Bool { listener.withLock { $0 != nil } }

    /// Stops the listener (``run()`` does when the pool it ran stops).
    func stopListening() {
        listener.withLock { task in
            task?.cancel()
            task = nil
        }
        notifications.setListening(false)
    }

    /// Hands one notification to the watches of its lease, or to the caches holding the store.
    package static func deliver(_ payload: String, to listening: Listening) {
        if payload.hasPrefix("purge ") { return deliverPurge(payload, to: listening) }
        let parts = payload.split(separator: " ", maxSplits: 3)
        let release: LeaseRelease? =
            switch parts.count == 3 ? parts[2] : "" {
            case "stored": .stored
            case "notStored": .notStored
            case "failed": .failed
            default: nil
            }
        switch (parts.first, parts.count) {
        case ("lease", 3) where parts[1].utf8.count == 64 && release != nil:
            listening.notifications.released(String(parts[1]), release!)
        case ("entry", 3...)
        where parts[2].utf8.count == 64
            && (parts.count == 3 || CacheKey(String(parts[3])).digest == parts[2]):
            // A lease holder stores before it gives the lease back: its waiters may serve now.
            listening.notifications.released(String(parts[2]), .entryChanged)
            guard parts[1] != listening.instance else { return }
            let key = parts.count == 4 ? CacheKey(String(parts[3])) : nil
            listening.remoteChanges.notify(.entry(digest: String(parts[2]), key: key))
        case ("all", 2):
            if parts[1] != listening.instance { listening.remoteChanges.notify(.all) }
        default:
            listening.logger?.debug("the PostgreSQL cache ignored a notification", metadata: ["payload": "\(payload)"])
        }
    }

    /// Hands a `purge` notification of another instance to the caches holding the store.
    private static func deliverPurge(_ payload: String, to listening: Listening) {
        let parts = payload.split(separator: " ", maxSplits: 4)
        guard parts.count == 5, parts[2] == "hard" || parts[2] == "soft",
            let target = purgeTarget(kind: parts[3], value: parts[4])
        else {
            listening.logger?.debug("the PostgreSQL cache ignored a notification", metadata: ["payload": "\(payload)"])
            return
        }
        if parts[1] != listening.instance { listening.remoteChanges.notify(.purge(target)) }
    }
}
#endif
