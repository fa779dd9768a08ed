import Foundation
import Testing

@testable import CourierTransport

/// The streamed request body's hand-off, as a pure machine: backpressure both ways, the
/// declared length, the end, and closing.
@Suite struct UploadChannelTests {
    typealias Machine = UploadChannel.StateMachine

    /// Reads at most `count` bytes; returns the read and the bytes.
    private func read(_ machine: inout Machine, _ count: Int) -> (Machine.Read, [UInt8]) {
        var buffer = [UInt8](repeating: 0, count: count)
        let read = buffer.withUnsafeMutableBytes { machine.read(into: $0) }
        if case .bytes(let n, _) = read { return (read, Array(buffer[..<n])) }
        return (read, [])
    }

    @Test func anEmptyBufferPausesTheReaderAndTheNextChunkResumesIt() {
        var machine = Machine(highWater: 100, declaredLength: nil)
        guard case .pause = read(&machine, 10).0 else {
            Issue.record("expected a pause")
            return
        }
        #expect(machine.readerPaused)
        guard case .proceed(resumeReader: true) = machine.offer(Data([1, 2, 3])) else {
            Issue.record("the offer must resume the paused reader")
            return
        }
        let (result, bytes) = read(&machine, 10)
        guard case .bytes(3, resumeProducer: false) = result else {
            Issue.record("got \(result)")
            return
        }
        #expect(bytes == [1, 2, 3])
        // The next offer finds the reader running: nothing to resume.
        guard case .proceed(resumeReader: false) = machine.offer(Data([4])) else {
            Issue.record("a running reader needs no resuming")
            return
        }
    }

    @Test func aFullBufferMakesTheProducerWaitUntilDrainedToAQuarter() {
        var machine = Machine(highWater: 100, declaredLength: nil)
        guard case .proceed = machine.offer(Data(count: 60)) else {
            Issue.record("under the mark")
            return
        }
        guard case .wait = machine.offer(Data(count: 60)) else {
            Issue.record("120 >= 100 must wait")
            return
        }
        #expect(machine.producerWaits)
        // Drained to 70, then 30: still above a quarter (25).
        guard case .bytes(50, resumeProducer: false) = read(&machine, 50).0 else {
            Issue.record("70 left")
            return
        }
        guard case .bytes(10, resumeProducer: false) = read(&machine, 40).0 else {
            Issue.record("60 left")
            return
        }
        guard case .bytes(40, resumeProducer: true) = read(&machine, 40).0 else {
            Issue.record("20 left is under a quarter: the producer goes on")
            return
        }
        #expect(!machine.producerWaits)
        #expect(machine.highWaterMark == 120)
    }

    @Test func chunksAreReadInOrderAcrossReadsOfAnySize() {
        var machine = Machine(highWater: 1 << 20, declaredLength: nil)
        let expected = (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        for start in stride(from: 0, to: 1000, by: 37) {
            _ = machine.offer(Data(expected[start..<min(start + 37, 1000)]))
        }
        _ = machine.finish(nil)
        var got: [UInt8] = []
        var size = 1
        while true {
            let (result, bytes) = read(&machine, size)
            if case .end = result { break }
            guard case .bytes = result else {
                Issue.record("got \(result)")
                return
            }
            got += bytes
            size = size % 50 + 3
        }
        #expect(got == expected)
    }

    @Test func theEndIsReadOnlyAfterEveryByteAndResumesAPausedReader() {
        var machine = Machine(highWater: 100, declaredLength: nil)
        _ = machine.offer(Data([9]))
        let resumes = machine.finish(nil)
        #expect(!resumes)
        guard case .bytes(1, _) = read(&machine, 10).0 else {
            Issue.record("the byte first")
            return
        }
        guard case .end = read(&machine, 10).0 else {
            Issue.record("then the end")
            return
        }

        var paused = Machine(highWater: 100, declaredLength: nil)
        _ = read(&paused, 10)
        let resumesPaused = paused.finish(nil)
        #expect(resumesPaused, "a reader paused for bytes must be resumed to see the end")
    }

    @Test func aBodyShorterThanItsDeclaredLengthFails() {
        var machine = Machine(highWater: 100, declaredLength: 10)
        _ = machine.offer(Data(count: 4))
        _ = machine.finish(nil)
        _ = read(&machine, 10)
        guard case .failed(let error) = read(&machine, 10).0 else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .requestBodyFailed)
        #expect(error.message.contains("4 of the 10"))
    }

    @Test func aChunkPastTheDeclaredLengthStopsTheProducerAndFailsTheReader() {
        var machine = Machine(highWater: 100, declaredLength: 5)
        _ = machine.offer(Data(count: 3))
        guard case .stop(let error, resumeReader: false) = machine.offer(Data(count: 3)) else {
            Issue.record("6 > 5 must stop")
            return
        }
        #expect(error.code == .requestBodyFailed)
        _ = read(&machine, 10)  // the 3 bytes taken before
        guard case .failed(let failure) = read(&machine, 10).0 else {
            Issue.record("expected a failure")
            return
        }
        #expect(failure.code == .requestBodyFailed)
    }

    /// The overflow that stops the producer is the body's end for curl: a reader paused for
    /// bytes must be resumed to see it, or the transfer waits forever (a hang found by running
    /// the end-to-end test repeatedly).
    @Test func anOverflowResumesAPausedReader() {
        var machine = Machine(highWater: 100, declaredLength: 5)
        _ = machine.offer(Data(count: 3))
        _ = read(&machine, 10)
        guard case .pause = read(&machine, 10).0 else {
            Issue.record("empty: pause")
            return
        }
        guard case .stop(_, resumeReader: true) = machine.offer(Data(count: 3)) else {
            Issue.record("the paused reader must be resumed")
            return
        }
        guard case .failed = read(&machine, 10).0 else {
            Issue.record("then the failure")
            return
        }
    }

    @Test func aFailedProducerFailsTheReaderAfterWhatItBuffered() {
        var machine = Machine(highWater: 100, declaredLength: nil)
        _ = machine.offer(Data([1]))
        _ = machine.finish(ServiceError(.requestBodyFailed, "boom"))
        guard case .bytes(1, _) = read(&machine, 10).0 else {
            Issue.record("the byte first")
            return
        }
        guard case .failed(let error) = read(&machine, 10).0 else {
            Issue.record("then the failure")
            return
        }
        #expect(error.message == "boom")
    }

    @Test func closingStopsTheProducerAndTheReaderAndDropsTheBuffer() {
        var machine = Machine(highWater: 10, declaredLength: nil)
        guard case .wait = machine.offer(Data(count: 20)) else {
            Issue.record("full")
            return
        }
        let stopsProducer = machine.close()
        #expect(stopsProducer, "a waiting producer must be told to stop")
        #expect(machine.buffered == 0)
        guard case .stop = machine.offer(Data([1])) else {
            Issue.record("closed: stop")
            return
        }
        guard case .failed = read(&machine, 10).0 else {
            Issue.record("closed: fail")
            return
        }
    }

    @Test func curlMayRewindOnlyBeforeAnythingWasRead() {
        var machine = Machine(highWater: 100, declaredLength: nil)
        _ = machine.offer(Data(count: 10))
        #expect(machine.canRewindToStart)
        _ = read(&machine, 1)
        #expect(!machine.canRewindToStart)
    }
}
