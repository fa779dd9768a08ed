import Testing

@testable import CourierServices

/// The reconnection rules of event streams, one by one, without a server.
@Suite("Event stream reconnection")
struct EventStreamReconnectionTests {
    typealias Machine = EventStreamReconnection

    @Test("an ended response or a dropped connection reconnects after the delay; an event resets the count")
    func reconnects() {
        var machine = Machine(delay: .seconds(3), maximumAttempts: 2)
        #expect(isReconnect(machine.ended(.closed), after: .seconds(3)))
        #expect(isReconnect(machine.ended(.failed(ServiceError(.connectionClosed))), after: .seconds(3)))
        #expect(machine.attemptsWithoutEvent == 2)
        machine.received()
        #expect(machine.attemptsWithoutEvent == 0)
        #expect(isReconnect(machine.ended(.failed(ServiceError(.truncatedBody))), after: .seconds(3)))
    }

    @Test("the server's retry field sets the delay")
    func serverDelay() {
        var machine = Machine(delay: .seconds(3), maximumAttempts: 5)
        machine.serverSetDelay(.milliseconds(250))
        #expect(isReconnect(machine.ended(.closed), after: .milliseconds(250)))
    }

    @Test("a 204 finishes; an error no retry can fix fails at once")
    func stops() {
        var machine = Machine(delay: .seconds(3), maximumAttempts: 5)
        guard case .finish = machine.ended(.noContent) else {
            Issue.record("a 204 must finish the stream")
            return
        }
        for code in [ServiceError.Code.malformedResponse, .unacceptableStatus, .cancelled, .shutDown, .tlsFailed] {
            guard case .fail(let error) = machine.ended(.failed(ServiceError(code))) else {
                Issue.record("\(code) must end the stream")
                continue
            }
            #expect(error.code == code)
        }
        #expect(machine.attemptsWithoutEvent == 0)
    }

    @Test("a 503 after the resource's own retries reconnects; a 404 does not")
    func statuses() {
        var machine = Machine(delay: .seconds(1), maximumAttempts: 5)
        let unavailable = ServiceError(.unacceptableStatus, response: HTTPResponse(status: .serviceUnavailable))
        #expect(isReconnect(machine.ended(.failed(unavailable)), after: .seconds(1)))
        let missing = ServiceError(.unacceptableStatus, response: HTTPResponse(status: .notFound))
        guard case .fail = machine.ended(.failed(missing)) else {
            Issue.record("a 404 must end the stream")
            return
        }
    }

    @Test("past maximumAttempts fruitless reconnections: the last error, or the end; 0 never reconnects")
    func bounded() {
        var machine = Machine(delay: .zero, maximumAttempts: 1)
        #expect(isReconnect(machine.ended(.closed), after: .zero))
        guard case .fail(let error) = machine.ended(.failed(ServiceError(.cannotConnect))) else {
            Issue.record("the second fruitless reconnection must fail")
            return
        }
        #expect(error.code == .cannotConnect)

        var closing = Machine(delay: .zero, maximumAttempts: 1)
        _ = closing.ended(.closed)
        guard case .finish = closing.ended(.closed) else {
            Issue.record("a clean end past the limit must finish")
            return
        }

        var never = Machine(delay: .seconds(3), maximumAttempts: 0)
        never.received()
        guard case .finish = never.ended(.closed) else {
            Issue.record("maximumAttempts 0 must never reconnect")
            return
        }
    }

    private func isReconnect(_ decision: Machine.Decision, after delay: Duration) -> Bool {
        if case .reconnect(let after) = decision { return after == delay }
        return false
    }
}
