import CourierCore
import CourierServices
import CourierTestServer
import CourierTesting
import Dispatch
import Foundation
import Testing

/// Counts callback calls from any thread.
final class Calls: Sendable {
    private let storage = LockedValue<[String]>([])
    func add(_ call: String) { storage.withLock { $0.append(call) } }
    var all: [String] { storage.withLock { $0 } }
}

@Suite("Callback chain")
struct LoadHandleTests {
    struct Item: Decodable, Sendable {
        var id: Int
        var name: String
    }
    struct ItemResource: Resource {
        typealias Response = Item
        var path = "/item"
        var endpoint: Endpoint { Endpoint("https://api.example.com", path: path) }
    }

    @Test("success fires onSuccess and onCompletion once each, also when registered late")
    func success() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: .json(#"{"id": 1, "name": "one"}"#))
        let coordinator = RequestCoordinator(transport: mock)
        let calls = Calls()
        let done = Signal()
        let handle = ItemResource().loading(using: coordinator)
            .onSuccess { calls.add("success \($0.name)") }
            .onFailure { _ in calls.add("failure") }
            .onCompletion { _ in
                calls.add("completion")
                done.fire()
            }
        await done.wait()
        handle.onSuccess { calls.add("late \($0.id)") }
        #expect(calls.all == ["success one", "completion", "late 1"])
        #expect(try handle.result?.get().id == 1)
    }

    @Test("failure fires onFailure once, on the callback queue when given")
    func failure() async throws {
        let mock = MockTransport()
        let coordinator = RequestCoordinator(transport: mock)
        let calls = Calls()
        let done = Signal()
        let queue = DispatchQueue(label: "callbacks")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "callbacks")
        ItemResource(path: "/missing").loading(using: coordinator, callbackQueue: queue)
            .onSuccess { _ in calls.add("success") }
            .onFailure { error in
                calls.add("failure \(error.code) on \(DispatchQueue.getSpecific(key: key) ?? "?")")
                done.fire()
            }
        await done.wait()
        #expect(calls.all == ["failure mockMissing on callbacks"])
    }

    @Test("cancel stops the load and every callback")
    func cancel() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/item", with: .json(#"{"id": 1, "name": "one"}"#))
        mock.holdResponses()
        let coordinator = RequestCoordinator(transport: mock)
        let calls = Calls()
        let handle = ItemResource().loading(using: coordinator)
            .onSuccess { _ in calls.add("success") }
            .onFailure { _ in calls.add("failure") }
            .onCompletion { _ in calls.add("completion") }
        #expect(await mock.waitForRequests(1))
        handle.cancel()
        // The cancellation reaches the transport, which gives up the held request.
        let deadline = ContinuousClock.now + .seconds(30)  // a starved sanitizer run may take seconds
        while mock.cancelledCount == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        mock.releaseResponses()
        try await Task.sleep(for: .milliseconds(50))
        handle.onCompletion { _ in calls.add("late") }
        #expect(calls.all.isEmpty)
        #expect(handle.isCancelled && handle.result == nil)
        #expect(mock.cancelledCount == 1)
    }
}

/// Fired once from any thread (a callback); awaited by the test.
final class Signal: Sendable {
    private let state = LockedValue<(fired: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func fire() {
        let waiter = state.withLock { state in
            state.fired = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let fired = state.withLock { state in
                if !state.fired { state.waiter = continuation }
                return state.fired
            }
            if fired { continuation.resume() }
        }
    }
}
