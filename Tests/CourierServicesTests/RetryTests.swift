import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Testing

/// Retries as a caller configures them: every knob of ``RetryPolicy`` is set here through its
/// public initializer and checked by the waits a recording clock sees and the requests the
/// server counts (the policy's own arithmetic is in `RetryPolicyTests`).
@Suite("Retries")
struct RetryTests {
    struct Flaky: Resource {
        typealias Response = Data
        let base: String
        let query: KeyValuePairs<String, String>
        var method: HTTPRequest.Method = .get
        var headers: HTTPFields = [:]
        var endpoint: Endpoint { Endpoint(base, path: "/flaky", query: query) }
    }

    func configuration(
        clock: RecordingClock, now: Date = Date(),
        policy: RetryPolicy = RetryPolicy(maximumAttempts: 4, initialDelay: .milliseconds(100), jitter: 0)
    ) -> RequestCoordinator.Configuration {
        var configuration = RequestCoordinator.Configuration()
        configuration.clock = clock
        configuration.now = { now }
        configuration.retryPolicy = policy
        return configuration
    }

    /// An IMF-fixdate, written here rather than with Courier's own formatter.
    func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    @Test("503 with Retry-After in seconds is retried after exactly that wait")
    func retryAfterSeconds() async throws {
        let clock = RecordingClock()
        try await withCoordinator(configuration: configuration(clock: clock)) { server, coordinator in
            let loaded = try await coordinator.load(
                Flaky(base: server.baseURL, query: ["key": "s", "failures": "2", "retryAfter": "7"]))
            #expect(String(decoding: loaded.value, as: UTF8.self) == #"{"attempts":3}"#)
            #expect(clock.sleeps == [.seconds(7), .seconds(7)])
        }
    }

    @Test("Retry-After as an HTTP date is measured against the injected wall clock")
    func retryAfterDate() async throws {
        let clock = RecordingClock()
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let later = httpDate(now.addingTimeInterval(42))
        try await withCoordinator(configuration: configuration(clock: clock, now: now)) { server, coordinator in
            _ = try await coordinator.load(
                Flaky(base: server.baseURL, query: ["key": "d", "failures": "1", "status": "429", "retryAfter": later]))
            #expect(clock.sleeps == [.seconds(42)])
        }
    }

    @Test("without Retry-After the backoff grows exponentially, and the last answer stands")
    func backoffAndExhaustion() async throws {
        let clock = RecordingClock()
        try await withCoordinator(configuration: configuration(clock: clock)) { server, coordinator in
            let error = await serviceError {
                _ = try await coordinator.load(Flaky(base: server.baseURL, query: ["key": "b", "failures": "10"]))
            }
            #expect(error?.code == .unacceptableStatus)
            #expect(error?.status?.code == 503)
            #expect(error?.bodyExcerpt == "busy")
            #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200), .milliseconds(400)])
            #expect(server.requests(to: "/flaky").count == 4)
        }
    }

    @Test("POST is not retried, unless it carries an Idempotency-Key")
    func idempotency() async throws {
        let clock = RecordingClock()
        try await withCoordinator(configuration: configuration(clock: clock)) { server, coordinator in
            let post = Flaky(base: server.baseURL, query: ["key": "p", "failures": "1"], method: .post)
            #expect(await serviceError { _ = try await coordinator.load(post) }?.status?.code == 503)
            var keyed = Flaky(base: server.baseURL, query: ["key": "k", "failures": "1"], method: .post)
            keyed.headers[HTTPField.Name("Idempotency-Key")!] = "abc"
            _ = try await coordinator.load(keyed)
            #expect(clock.sleeps.count == 1)
        }
    }

    /// A streamed body is read by the first attempt: a PUT that would be retried is not, the
    /// server sees one request and the answer stands.
    @Test("a request with a streamed body is never retried")
    func streamedBodiesAreNotRetried() async throws {
        struct Upload: Resource {
            typealias Response = Data
            let base: String
            var method: HTTPRequest.Method { .put }
            var endpoint: Endpoint { Endpoint(base, path: "/flaky", query: ["key": "streamed", "failures": "1"]) }
            var body: RequestBody? {
                let (chunks, continuation) = AsyncStream<Data>.makeStream()
                continuation.yield(Data("part one, ".utf8))
                continuation.yield(Data("part two".utf8))
                continuation.finish()
                return .stream(chunks)
            }
        }
        let clock = RecordingClock()
        try await withCoordinator(configuration: configuration(clock: clock)) { server, coordinator in
            let error = await serviceError { _ = try await coordinator.load(Upload(base: server.baseURL)) }
            #expect(error?.status?.code == 503)
            #expect(clock.sleeps.isEmpty)
            #expect(server.requests(to: "/flaky").count == 1)
        }
    }

    @Test("404 is never retried; a refused connection is")
    func whatRetries() async throws {
        let clock = RecordingClock()
        let mock = MockTransport()
        mock.respond(to: .get, "/missing", with: .status(404))
        mock.respond(to: .get, "/down", with: .failure(.cannotConnect))
        let coordinator = RequestCoordinator(transport: mock, configuration: configuration(clock: clock))
        struct Path: Resource {
            typealias Response = Data
            let path: String
            var endpoint: Endpoint { Endpoint("http://mock.test", path: path) }
        }
        #expect(
            await serviceError { _ = try await Path(path: "/missing").load(using: coordinator) }?.code
                == .unacceptableStatus)
        #expect(mock.requestCount == 1)
        #expect(
            await serviceError { _ = try await Path(path: "/down").load(using: coordinator) }?.code == .cannotConnect)
        #expect(mock.requestCount == 5)
        #expect(clock.sleeps.count == 3)
    }

    @Test("a real refused connection is retried, then reported as cannotConnect")
    func refusedOverLoopback() async throws {
        let clock = RecordingClock()
        let refusing = try RefusingPort()  // bound, never listening: connections are refused
        let base = refusing.baseURL
        defer { withExtendedLifetime(refusing) {} }
        let transport = CurlTransport()
        let coordinator = RequestCoordinator(transport: transport, configuration: configuration(clock: clock))
        let error = await serviceError {
            _ = try await coordinator.load(Flaky(base: base, query: ["key": "x"]))
        }
        #expect(error?.code == .cannotConnect)
        #expect(clock.sleeps.count == 3)
        await transport.shutdown()
    }

    @Test("the multiplier sets how much each wait grows, and the maximum delay caps it")
    func multiplierAndMaximumDelay() async throws {
        let clock = RecordingClock()
        let policy = RetryPolicy(
            maximumAttempts: 5, initialDelay: .milliseconds(100), multiplier: 3, maximumDelay: .seconds(1), jitter: 0)
        try await withCoordinator(configuration: configuration(clock: clock, policy: policy)) { server, coordinator in
            _ = try await coordinator.load(Flaky(base: server.baseURL, query: ["key": "m", "failures": "4"]))
            #expect(clock.sleeps == [.milliseconds(100), .milliseconds(300), .milliseconds(900), .seconds(1)])
            #expect(server.requests(to: "/flaky").count == 5)
        }
    }

    @Test("a policy that does not honor Retry-After backs off as if the header were absent")
    func retryAfterIgnored() async throws {
        let clock = RecordingClock()
        let policy = RetryPolicy(
            maximumAttempts: 4, initialDelay: .milliseconds(100), jitter: 0, honorsRetryAfter: false)
        try await withCoordinator(configuration: configuration(clock: clock, policy: policy)) { server, coordinator in
            let loaded = try await coordinator.load(
                Flaky(base: server.baseURL, query: ["key": "i", "failures": "2", "retryAfter": "7"]))
            #expect(String(decoding: loaded.value, as: UTF8.self) == #"{"attempts":3}"#)
            #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200)])
        }
    }

    @Test("a Retry-After beyond the policy's maximum ends the retries with the answer as it is")
    func retryAfterTooLong() async throws {
        let clock = RecordingClock()
        let policy = RetryPolicy(
            maximumAttempts: 4, initialDelay: .milliseconds(100), jitter: 0, maximumRetryAfter: .seconds(5))
        try await withCoordinator(configuration: configuration(clock: clock, policy: policy)) { server, coordinator in
            let error = await serviceError {
                _ = try await coordinator.load(
                    Flaky(base: server.baseURL, query: ["key": "l", "failures": "1", "retryAfter": "7"]))
            }
            #expect(error?.status?.code == 503)
            #expect(clock.sleeps.isEmpty)
            #expect(server.requests(to: "/flaky").count == 1)
        }
    }

    @Test("a policy that retries non-idempotent requests repeats a POST without an Idempotency-Key")
    func nonIdempotentRetries() async throws {
        let clock = RecordingClock()
        let policy = RetryPolicy(
            maximumAttempts: 4, initialDelay: .milliseconds(100), jitter: 0, retriesNonIdempotentRequests: true)
        try await withCoordinator(configuration: configuration(clock: clock, policy: policy)) { server, coordinator in
            let post = Flaky(base: server.baseURL, query: ["key": "n", "failures": "1"], method: .post)
            let loaded = try await coordinator.load(post)
            #expect(String(decoding: loaded.value, as: UTF8.self) == #"{"attempts":2}"#)
            #expect(clock.sleeps == [.milliseconds(100)])
        }
    }

    @Test("only the policy's retryable statuses are retried")
    func retryableStatuses() async throws {
        let clock = RecordingClock()
        let policy = RetryPolicy(
            maximumAttempts: 4, initialDelay: .milliseconds(100), jitter: 0, retryableStatuses: [500])
        try await withCoordinator(configuration: configuration(clock: clock, policy: policy)) { server, coordinator in
            let busy = await serviceError {
                _ = try await coordinator.load(Flaky(base: server.baseURL, query: ["key": "r1", "failures": "1"]))
            }
            #expect(busy?.status?.code == 503)
            #expect(clock.sleeps.isEmpty)
            _ = try await coordinator.load(
                Flaky(base: server.baseURL, query: ["key": "r2", "failures": "1", "status": "500"]))
            #expect(clock.sleeps == [.milliseconds(100)])
        }
    }
}
