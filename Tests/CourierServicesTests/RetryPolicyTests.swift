import Foundation
import Testing

@testable import CourierServices

/// The arithmetic inside ``RetryPolicy``: how a `Retry-After` value is read and how jitter
/// spreads a delay (the loads that use them are in `RetryTests`).
@Suite("Retry policy")
struct RetryPolicyTests {
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
