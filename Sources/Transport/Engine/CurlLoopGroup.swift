internal import CourierCore
internal import Synchronization

/// The transport's loops, and the task executor that spreads tasks over their threads.
///
/// Transfers: one started on a loop thread (by a task that prefers this executor) runs on
/// that loop, so its completion resumes the task with no thread hop. Any other goes to the
/// first loop holding fewer than its spill threshold of unfinished transfers (16, or fewer
/// when the loop's share of the connection limits is smaller), and once every loop holds
/// that many, to the least-loaded one. So a light or moderate load keeps to loop 0 and its
/// warm connections (one HTTP/2 connection carries a burst of loads), and a heavy one
/// spreads evenly over every loop, and so over as many cores.
///
/// Jobs: a job enqueued by a loop's own curl work (a completion, a streamed chunk) stays on
/// that loop. Any other (a new child task, a task entering the preference, a hop back from
/// an actor) goes to the next loop in turn, so that a task fanning out spreads its children.
final class CurlLoopGroup: TaskExecutor {
    let loops: [CurlEventLoop]
    private let nextJobLoop = Atomic<Int>(0)

    /// Starts `count` loops (fewer when the limits allow fewer connections than that), each
    /// with its share of `limits`.
    init(count: Int, limits: CurlEventLoop.Limits, connections: ConnectionSettings = .init(), threadName: String) {
        let count = Self.loopCount(requested: count, limits: limits)
        loops = (0..<count).map { index in
            CurlEventLoop(
                index: index, limits: limits.share(index, of: count), connections: connections,
                threadName: Self.threadName(threadName, index: index, of: count))
        }
        let executor = asUnownedTaskExecutor()
        for loop in loops { loop.startThread(jobExecutor: executor) }
    }

    /// The loop a new transfer goes to.
    func loopForTransfer() -> CurlEventLoop {
        if loops.count == 1 { return loops[0] }
        if let current = member(CurlEventLoop.current) { return current }
        for loop in loops where loop.load < loop.limits.spillThreshold { return loop }
        var best = loops[0]
        var bestLoad = best.load
        for loop in loops.dropFirst() {
            let load = loop.load
            if load < bestLoad { (best, bestLoad) = (loop, load) }
        }
        return best
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if loops.count == 1 { return loops[0].enqueueJob(job) }
        if let current = member(CurlEventLoop.current), !current.runsJobs.value { return current.enqueueJob(job) }
        let turn = nextJobLoop.wrappingAdd(1, ordering: .relaxed).oldValue
        loops[Int(UInt(bitPattern: turn) % UInt(loops.count))].enqueueJob(job)
    }

    /// Shuts every loop down at once; returns when all have released their curl resources.
    func shutdown(cancelInFlight: Bool) async {
        await withTaskGroup(of: Void.self) { group in
            for loop in loops { group.addTask { await loop.shutdown(cancelInFlight: cancelInFlight) } }
        }
    }

    func shutdownDetached() {
        for loop in loops { loop.shutdownDetached() }
    }

    /// `loop` when it is one of this group's.
    private func member(_ loop: CurlEventLoop?) -> CurlEventLoop? {
        guard let loop, loop.index < loops.count, loops[loop.index] === loop else { return nil }
        return loop
    }

    /// One loop per allowed connection at most: a loop without a connection of its own to a
    /// host could only queue.
    static func loopCount(requested: Int, limits: CurlEventLoop.Limits) -> Int {
        var count = max(1, requested)
        if limits.connectionsPerHost > 0 { count = min(count, limits.connectionsPerHost) }
        if limits.connections > 0 { count = min(count, limits.connections) }
        return count
    }

    /// The name itself for a single loop; otherwise `name-<index>`, the name shortened so that
    /// the suffix survives Linux's 15-byte limit.
    static func threadName(_ name: String, index: Int, of count: Int) -> String {
        guard count > 1 else { return name }
        let suffix = "-\(index)"
        var base = Substring(name)
        while base.utf8.count + suffix.utf8.count > 15, !base.isEmpty { base.removeLast() }
        return base + suffix
    }
}

extension CurlEventLoop.Limits {
    /// Unfinished transfers a loop takes before new ones spill to the next loop: 16, or the
    /// loop's connection share when smaller (more would only queue for a connection).
    ///
    /// Why 16: loads below it rarely keep a loop thread busy (at 1 ms per request, 16 in
    /// flight are 16,000 requests/s, a fraction of one loop's capacity), and keeping them on
    /// one loop reuses its warm connections instead of opening one per loop.
    var spillThreshold: Int { [16, connectionsPerHost, connections].filter { $0 > 0 }.min() ?? 16 }

    /// Loop `index`'s share of limits meant for `count` loops together: the connection limits
    /// split so that the shares add up to the whole (0, unlimited, stays 0); idle connections
    /// split too, at least one each; the easy-handle pool is per loop.
    func share(_ index: Int, of count: Int) -> Self {
        func split(_ total: Int) -> Int { total <= 0 ? total : total / count + (index < total % count ? 1 : 0) }
        return Self(
            connectionsPerHost: split(connectionsPerHost), connections: split(connections),
            idleConnections: idleConnections <= 0 ? idleConnections : max(1, split(idleConnections)),
            idleHandles: idleHandles)
    }
}
