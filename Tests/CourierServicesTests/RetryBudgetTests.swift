import CourierTesting
import Foundation
import Testing

@testable import CourierServices

/// The machine alone, on made-up times.
@Suite struct RetryBudgetMachineTests {
    @Test func withoutLoadsOnlyTheFloorIsAllowed() {
        var machine = RetryBudgetMachine(RetryBudget(ratio: 0.2, minimumPerSecond: 1, window: .seconds(10)))
        let allowed = (0..<20).filter { _ in machine.retry(at: .seconds(1)) }.count
        #expect(allowed == 10)
    }

    @Test func eachLoadAddsItsShare() {
        var machine = RetryBudgetMachine(RetryBudget(ratio: 0.2, minimumPerSecond: 0, window: .seconds(10)))
        for _ in 0..<100 { machine.loadSent(at: .milliseconds(500)) }
        let allowed = (0..<100).filter { _ in machine.retry(at: .seconds(2)) }.count
        #expect(allowed == 20)
    }

    @Test func loadsAndRetriesLeaveTheWindow() {
        var machine = RetryBudgetMachine(RetryBudget(ratio: 0.5, minimumPerSecond: 0, window: .seconds(10)))
        for _ in 0..<10 { machine.loadSent(at: .seconds(0)) }
        #expect((0..<10).filter { _ in machine.retry(at: .seconds(5)) }.count == 5)
        // At 10.5 s the first second's loads are gone: nothing is allowed.
        let afterFirstSecond = machine.retry(at: .milliseconds(10_500))
        #expect(!afterFirstSecond)
        for _ in 0..<4 { machine.loadSent(at: .seconds(11)) }
        // The retries made at 5 s still count: 0.5 × 4 = 2 allowed, 5 made.
        let withOldRetries = machine.retry(at: .seconds(11))
        #expect(!withOldRetries)
        // Once they left too, 2 fit.
        #expect((0..<5).filter { _ in machine.retry(at: .seconds(16)) }.count == 2)
        let idleAt20 = machine.isIdle(at: .seconds(20))
        let idleAt30 = machine.isIdle(at: .seconds(30))
        #expect(!idleAt20 && idleAt30)
    }

    @Test func aTimeBeforeTheNewestBucketCountsInIt() {
        var machine = RetryBudgetMachine(RetryBudget(ratio: 1, minimumPerSecond: 0, window: .seconds(10)))
        machine.loadSent(at: .seconds(5))
        machine.loadSent(at: .seconds(4))  // read a moment earlier by another thread
        let made = (0..<3).map { _ in machine.retry(at: .seconds(5)) }
        #expect(made == [true, true, false])
    }

    @Test func aLongGapEmptiesEveryBucket() {
        var machine = RetryBudgetMachine(RetryBudget(ratio: 1, minimumPerSecond: 0, window: .seconds(1)))
        for second in 0..<3 { machine.loadSent(at: .milliseconds(second * 100)) }
        let before = machine.retry(at: .milliseconds(300))
        let idle = machine.isIdle(at: .seconds(3_600))
        let after = machine.retry(at: .seconds(3_600))
        #expect(before && idle && !after)
    }
}

/// The budget under a coordinator: an upstream that fails every request.
@Suite struct RetryBudgetLoadTests {
    struct Item: Resource {
        typealias Response = Data
        var host = "api.example.com"
        var endpoint: Endpoint { Endpoint("https://\(host)", path: "/item") }
    }

    static func coordinator(_ mock: MockTransport, budget: RetryBudget?) -> RequestCoordinator {
        var configuration = RequestCoordinator.Configuration()
        // Pauses of a millisecond, on the real clock.
        configuration.retryPolicy = RetryPolicy(maximumAttempts: 3, initialDelay: .milliseconds(1), jitter: 0)
        configuration.retryBudget = budget
        // The budget alone: a circuit would stop the loads after five failures.
        configuration.circuitBreaker = nil
        configuration.cache = nil
        return RequestCoordinator(transport: mock, configuration: configuration)
    }

    @Test func aFailingUpstreamGetsAtMostAQuarterMoreRequestsThanLoads() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: .serviceUnavailable())
        // The default ratio, over a window the test cannot outlast (500 loads take 80 s under
        // ThreadSanitizer, eight of the default's 10 s windows) and a floor that fits it.
        let coordinator = Self.coordinator(
            mock, budget: RetryBudget(ratio: 0.2, minimumPerSecond: 1.0 / 360, window: .seconds(3_600)))
        let events = coordinator.events(bufferingNewest: 10_000)
        for _ in 0..<500 { _ = try? await Item().load(using: coordinator) }
        // 20% of 500, plus 10 for the window's floor: 1.22 requests per load, not 3.
        #expect(mock.requestCount <= 610, "\(mock.requestCount) requests for 500 loads")
        #expect(mock.requestCount >= 600)
        #expect(mock.requestCount > 500, "the budget still allows some retries")
        var (refused, failed) = (0, 0)
        for await event in events {
            if event.kind.name == .retryRefused {
                #expect(event.kind.reason == "budget")
                refused += 1
            }
            if event.kind.name == .failed { failed += 1 }
            if failed == 500 { break }
        }
        // Every load that did not use up its attempts was refused a retry.
        #expect(refused >= 500 - (mock.requestCount - 500))
        await coordinator.shutdown()
    }

    @Test func withoutABudgetThePolicyAloneDecides() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: .serviceUnavailable())
        let coordinator = Self.coordinator(mock, budget: nil)
        for _ in 0..<100 { _ = try? await Item().load(using: coordinator) }
        #expect(mock.requestCount == 300)
        await coordinator.shutdown()
    }

    /// Each host has its own budget: one that fails everything does not spend another's.
    @Test func eachHostHasItsOwnBudget() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: .serviceUnavailable())
        let coordinator = Self.coordinator(
            mock, budget: RetryBudget(ratio: 0, minimumPerSecond: 1.0 / 3_600, window: .seconds(3_600)))
        _ = try? await Item(host: "a.example.com").load(using: coordinator)
        _ = try? await Item(host: "a.example.com").load(using: coordinator)
        #expect(mock.requestCount == 3, "one retry allowed for a: 1/3,600 per second over an hour")
        _ = try? await Item(host: "b.example.com").load(using: coordinator)
        #expect(mock.requestCount == 5, "b's budget is whole: its one retry is made")
        await coordinator.shutdown()
    }
}
