import CourierServices
import CourierTestServer
import CourierTesting
import Foundation
import Testing

@testable import CourierServices

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

    func configuration(clock: RecordingClock, now: Date = Date()) -> RequestCoordinator.Configuration {
        var configuration = RequestCoordinator.Configuration()
        configuration.clock = clock
        configuration.now = { now }
        configuration.retryPolicy = RetryPolicy(maximumAttempts: 4, initialDelay: .milliseconds(100), jitter: 0)
        return configuration
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
        let later = HTTPDate.format(now.addingTimeInterval(42))
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

    @Test("Retry-After parsing: seconds, IMF-fixdate, RFC 850, asctime, garbage")
    func parsing() {
        let now = Date(timeIntervalSince1970: 784_111_777 - 10)  // 10 s before 06 Nov 1994 08:49:37
        #expect(RetryPolicy.retryAfter("120", now: now) == .seconds(120))
        #expect(RetryPolicy.retryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == .seconds(10))
        #expect(RetryPolicy.retryAfter("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == .seconds(10))
        #expect(RetryPolicy.retryAfter("Sun Nov  6 08:49:37 1994", now: now) == .seconds(10))
        #expect(RetryPolicy.retryAfter("soon", now: now) == nil)
        #expect(RetryPolicy.retryAfter("-5", now: now) == nil)
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test("jitter keeps each delay within its share of the backoff")
    func jitter() {
        let policy = RetryPolicy(initialDelay: .seconds(1), jitter: 0.5)
        #expect(policy.backoff(attempt: 1, random: 0) == .seconds(1))
        #expect(policy.backoff(attempt: 1, random: 0.999_999) > .milliseconds(500))
        #expect(policy.backoff(attempt: 3, random: 0) == .seconds(4))
        #expect(
            RetryPolicy(initialDelay: .seconds(20), maximumDelay: .seconds(30), jitter: 0).backoff(
                attempt: 5, random: 0) == .seconds(30))
    }
}
