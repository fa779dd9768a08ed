import CourierCore
import CourierServices
import CourierTestServer
import Foundation
import Testing

/// A load ends by its deadline (``withDeadline(_:isolation:_:)``) or its coordinator's load
/// budget: its attempts, retry pauses, its wait for a turn at the host and its wait for an
/// identical transfer it joined.
@Suite struct DeadlineTests {
    struct Route: Resource {
        typealias Response = Data
        let base: String
        var path: String
        var policy: RetryPolicy? = nil
        var endpoint: Endpoint { Endpoint(base, path: path) }
        var retryPolicy: RetryPolicy? { policy }
    }

    @Test func anInnerDeadlineNeverExtendsAnOuterOne() async {
        #expect(Deadline.current == nil)
        let outer = ContinuousClock.now + .seconds(1)
        await withDeadline(outer) {
            #expect(Deadline.current == outer)
            await withDeadline(in: .seconds(60)) { #expect(Deadline.current == outer) }
            let sooner = ContinuousClock.now + .milliseconds(10)
            await withDeadline(sooner) { #expect(Deadline.current == sooner) }
            // Child tasks carry it.
            await Task { #expect(Deadline.current == outer) }.value
        }
        #expect(Deadline.current == nil)
    }

    @Test func aMomentRoundTripsThroughAnInstant() {
        let instant = ContinuousClock.now + .milliseconds(1_234)
        let moment = Moment(instant)
        #expect(moment.instant == instant)
        #expect((moment + .seconds(2)).instant == instant + .seconds(2))
        #expect((moment + .seconds(2)) - moment == .seconds(2))
        #expect(Moment.now < moment)
    }

    @Test func aTypedErrorGoesThroughUnchanged() async {
        struct Refused: Error {}
        let result: Result<Int, Refused> = await {
            do throws(Refused) {
                return .success(
                    try await withDeadline(in: .seconds(1)) { () async throws(Refused) -> Int in throw Refused() })
            } catch {
                return .failure(error)
            }
        }()
        #expect(throws: Refused.self) { try result.get() }
    }

    /// An upstream that stalls after its head would hold each attempt for its idle limit
    /// (60 s, three attempts by default): the deadline ends the load, with one request sent.
    @Test func aStalledUpstreamEndsTheLoadAtItsDeadline() async throws {
        try await withCoordinator { server, coordinator in
            let started = ContinuousClock.now
            let error = await serviceError {
                try await withDeadline(in: .milliseconds(600)) {
                    _ = try await Route(base: server.baseURL, path: "/stall-after-head").load(using: coordinator)
                }
            }
            let elapsed = ContinuousClock.now - started
            #expect(error?.code == .timedOut)
            #expect(error?.message.contains("deadline") == true)
            #expect(elapsed >= .milliseconds(550) && elapsed < .seconds(20), "ended after \(elapsed)")
            // One request at most (under a sanitizer, the deadline may pass before it is sent).
            #expect(server.requests(to: "/stall-after-head").count <= 1)
        }
    }

    @Test func theLoadBudgetEndsALoadWithoutADeadline() async throws {
        var configuration = RequestCoordinator.Configuration()
        configuration.loadBudget = .milliseconds(600)
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let started = ContinuousClock.now
            let error = await serviceError {
                _ = try await Route(base: server.baseURL, path: "/stall-after-head").load(using: coordinator)
            }
            let elapsed = ContinuousClock.now - started
            #expect(error?.code == .timedOut)
            #expect(elapsed >= .milliseconds(550) && elapsed < .seconds(20), "ended after \(elapsed)")
            // A deadline sooner than the budget wins.
            let error2 = await serviceError {
                try await withDeadline(in: .milliseconds(100)) {
                    _ = try await Route(base: server.baseURL, path: "/stall-after-head").load(using: coordinator)
                }
            }
            #expect(error2?.code == .timedOut)
        }
    }

    /// The default budget: a stalled load ends within a minute, not after three idle limits.
    @Test func theDefaultBudgetIsAMinute() {
        #expect(RequestCoordinator.Configuration().loadBudget == .seconds(60))
    }

    /// A retry whose pause would end past the deadline is not made: the failure that asked for
    /// it is returned at once.
    @Test func aRetryPastTheDeadlineIsNotMade() async throws {
        try await withCoordinator { server, coordinator in
            let policy = RetryPolicy(maximumAttempts: 3, initialDelay: .seconds(60), jitter: 0)
            let started = ContinuousClock.now
            let error = await serviceError {
                try await withDeadline(in: .seconds(30)) {
                    _ = try await Route(base: server.baseURL, path: "/status/503", policy: policy).load(
                        using: coordinator)
                }
            }
            #expect(error?.status == .serviceUnavailable)
            #expect(ContinuousClock.now - started < .seconds(30))
            #expect(server.requests(to: "/status/503").count == 1)

            // With room for the pause, it is made.
            let quick = RetryPolicy(maximumAttempts: 2, initialDelay: .milliseconds(50), jitter: 0)
            _ = await serviceError {
                try await withDeadline(in: .seconds(30)) {
                    _ = try await Route(base: server.baseURL, path: "/status/503", policy: quick).load(
                        using: coordinator)
                }
            }
            #expect(server.requests(to: "/status/503").count == 3)
        }
    }

    /// A load waiting for its turn behind a host's other loads stops waiting at its deadline.
    @Test func aWaitForATurnEndsAtTheDeadline() async throws {
        var configuration = RequestCoordinator.Configuration()
        configuration.maximumLoadsPerHost = 1
        try await withCoordinator(configuration: configuration) { server, coordinator in
            let holder = Task {
                try await Route(base: server.baseURL, path: "/stall-after-head", policy: RetryPolicy.none).load(
                    using: coordinator)
            }
            defer { holder.cancel() }
            try await waitUntil { server.requests(to: "/stall-after-head").count == 1 }
            let started = ContinuousClock.now
            let error = await serviceError {
                try await withDeadline(in: .milliseconds(300)) {
                    _ = try await Route(base: server.baseURL, path: "/json").load(using: coordinator)
                }
            }
            #expect(error?.code == .timedOut)
            #expect(ContinuousClock.now - started < .seconds(20))
            #expect(server.requests(to: "/json").isEmpty)
            holder.cancel()
            _ = await holder.result
        }
    }

    /// A load that joined an identical transfer in flight leaves it at its own deadline; the
    /// transfer goes on for the load that leads it.
    @Test func aJoinedLoadLeavesAtItsDeadline() async throws {
        try await withCoordinator { server, coordinator in
            let route = Route(base: server.baseURL, path: "/stall-after-head", policy: RetryPolicy.none)
            let leader = Task { try await route.load(using: coordinator) }
            defer { leader.cancel() }
            try await waitUntil { server.requests(to: "/stall-after-head").count == 1 }
            let started = ContinuousClock.now
            let error = await serviceError {
                try await withDeadline(in: .milliseconds(300)) { _ = try await route.load(using: coordinator) }
            }
            #expect(error?.code == .timedOut)
            #expect(error?.message.contains("joined") == true)
            #expect(ContinuousClock.now - started < .seconds(20))
            #expect(server.requests(to: "/stall-after-head").count == 1)
            // The leader still waited for its transfer: only its cancellation ends it.
            leader.cancel()
            let led = await serviceError { _ = try await leader.value }
            #expect(led?.code == .cancelled)
        }
    }

    /// With a deadline field, each attempt tells the server how long is left; never by default.
    @Test func theTimeLeftGoesToTheNextHopWhenAsked() async throws {
        try await withCoordinator { server, coordinator in
            try await withDeadline(in: .seconds(30)) {
                _ = try await Route(base: server.baseURL, path: "/json").load(using: coordinator)
            }
            #expect(server.requests(to: "/json").first?.header("X-Deadline-Ms") == nil)
        }
        var configuration = RequestCoordinator.Configuration()
        configuration.deadlineField = HTTPField.Name("X-Deadline-Ms")!
        try await withCoordinator(configuration: configuration) { server, coordinator in
            try await withDeadline(in: .seconds(30)) {
                _ = try await Route(base: server.baseURL, path: "/json").load(using: coordinator)
            }
            // Without a deadline, the load budget is what the caller waits.
            _ = try await Route(base: server.baseURL, path: "/json").load(using: coordinator)
            let sent = server.requests(to: "/json").compactMap { $0.header("X-Deadline-Ms").flatMap(Int.init) }
            #expect(sent.count == 2)
            #expect((1_000...30_000).contains(sent.first ?? 0), "\(sent)")
            #expect((30_000...60_000).contains(sent.last ?? 0), "\(sent)")
            // Each retry says what is left then.
            let policy = RetryPolicy(maximumAttempts: 2, initialDelay: .milliseconds(300), jitter: 0)
            _ = await serviceError {
                try await withDeadline(in: .seconds(60)) {
                    _ = try await Route(base: server.baseURL, path: "/status/503", policy: policy).load(
                        using: coordinator)
                }
            }
            let retried = server.requests(to: "/status/503").compactMap {
                $0.header("X-Deadline-Ms").flatMap(Int.init)
            }
            #expect(retried.count == 2)
            if retried.count == 2 { #expect(retried[0] - retried[1] >= 250, "\(retried)") }
        }
    }

    /// A download has no budget (its size sets its length), but a deadline bounds it.
    @Test func aDownloadHasNoBudgetButADeadlineBoundsIt() async throws {
        let directory = try TransferDirectory()
        var configuration = transferConfiguration()
        configuration.loadBudget = .milliseconds(100)
        try await withCoordinator(configuration: configuration) { server, coordinator in
            var slow = TransferResource(server, "/slow-body", ["chunks": "5", "delayMs": "60"])
            slow.retryPolicy = RetryPolicy.none
            let loaded = try await slow.download(to: directory.file("whole"), using: coordinator).value
            #expect(loaded.value.size == 500)
            let error = await serviceError {
                try await withDeadline(in: .milliseconds(100)) {
                    _ = try await slow.download(to: directory.file("cut"), using: coordinator).value
                }
            }
            #expect(error?.code == .timedOut)

            // Nor have uploads, or loads whose body is read from a file.
            let file = directory.file("body")
            try Data("body".utf8).write(to: URL(fileURLWithPath: file))
            var upload = slow
            upload.method = .put
            upload.body = .file(atPath: file)
            #expect(try await upload.load(using: coordinator).count == 500)
            upload.body = .string("body")
            #expect(try await upload.upload(using: coordinator).value.value.count == 500)
            // An in-memory body sent by load() has one.
            let budgeted = await serviceError { _ = try await upload.load(using: coordinator) }
            #expect(budgeted?.code == .timedOut)
        }
    }
}

/// Polls `condition` every 10 ms for up to 30 s.
private func waitUntil(_ condition: () -> Bool) async throws {
    let end = ContinuousClock.now + .seconds(30)
    while !condition() {
        guard ContinuousClock.now < end else {
            Issue.record("the condition never held")
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}
