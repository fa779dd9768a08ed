internal import CourierCore
internal import FoundationEssentials

extension UploadChannel {
    /// What a streamed request body's hand-off knows, and every way it moves: the producer (a
    /// task reading the caller's sequence) offers chunks and finishes; curl's read callback, on
    /// the loop thread, takes bytes; the transfer closes it when it ends. A pure value: each
    /// transition returns what the caller must do outside the lock (resume the loop or the
    /// producer), so the machine is tested without threads, curl or tasks.
    ///
    /// Bounded memory: an offer that brings the buffer to `highWater` or past it tells the
    /// producer to wait; it may go on once curl has drained the buffer to `lowWater`.
    struct StateMachine: Sendable {
        let highWater: Int
        let lowWater: Int
        /// The length the body declared, checked against what the producer delivers.
        let declaredLength: Int?

        private var chunks = FIFO<Data>()
        /// Bytes of the first chunk already read.
        private var offset = 0
        private(set) var buffered = 0
        /// Bytes the producer has offered in all.
        private(set) var produced = 0
        /// The most bytes ever buffered at once (tests read it to prove bounded memory).
        private(set) var highWaterMark = 0
        /// How the producer ended: `nil` while it runs.
        private var end: Result<Void, ServiceError>?
        /// Whether curl was told to pause because the buffer was empty.
        private(set) var readerPaused = false
        /// Whether the producer waits for room.
        private(set) var producerWaits = false
        /// Whether the transfer ended (nothing more is read).
        private(set) var isClosed = false

        init(highWater: Int, declaredLength: Int?) {
            self.highWater = max(highWater, 1)
            self.lowWater = self.highWater / 4
            self.declaredLength = declaredLength
        }

        enum OfferAction {
            /// Taken; the producer may offer the next chunk. `resumeReader`: curl is paused
            /// waiting for bytes and must be resumed.
            case proceed(resumeReader: Bool)
            /// Taken, and the buffer is full: the producer waits for ``Read/bytes(_:resumeProducer:)``
            /// to say `resumeProducer`, or for ``close()``.
            case wait(resumeReader: Bool)
            /// The transfer ended or the chunk overflows the declared length: the producer stops.
            /// `resumeReader`: curl is paused waiting for bytes and must be resumed to see the
            /// failure.
            case stop(ServiceError, resumeReader: Bool)
        }

        /// The producer offers `chunk` (not empty).
        mutating func offer(_ chunk: Data) -> OfferAction {
            if isClosed {
                return .stop(
                    ServiceError(.cancelled, "The request ended before its body was sent."), resumeReader: false)
            }
            if let declaredLength, produced + chunk.count > declaredLength {
                let error = ServiceError(
                    .requestBodyFailed,
                    "The streamed request body produced more than the \(declaredLength) bytes it declared.")
                end = .failure(error)
                let resumeReader = readerPaused
                readerPaused = false
                return .stop(error, resumeReader: resumeReader)
            }
            chunks.append(chunk)
            buffered += chunk.count
            produced += chunk.count
            highWaterMark = max(highWaterMark, buffered)
            let resumeReader = readerPaused
            readerPaused = false
            if buffered >= highWater {
                producerWaits = true
                return .wait(resumeReader: resumeReader)
            }
            return .proceed(resumeReader: resumeReader)
        }

        /// The producer ended: its sequence finished (`nil`) or threw. Returns whether curl
        /// is paused waiting for bytes and must be resumed to see the end.
        mutating func finish(_ failure: ServiceError?) -> Bool {
            if end == nil {
                if let failure {
                    end = .failure(failure)
                } else if let declaredLength, produced != declaredLength {
                    end = .failure(
                        ServiceError(
                            .requestBodyFailed,
                            "The streamed request body ended after \(produced) of the \(declaredLength) bytes it declared."
                        ))
                } else {
                    end = .success(())
                }
            }
            let resumeReader = readerPaused
            readerPaused = false
            return resumeReader
        }

        enum Read {
            /// `count` bytes copied. `resumeProducer`: the producer waited for room and may
            /// go on.
            case bytes(Int, resumeProducer: Bool)
            /// Nothing buffered yet: pause curl until an offer resumes it.
            case pause
            /// The body is complete.
            case end
            /// The body failed (or the transfer was closed): abort the upload.
            case failed(ServiceError)
        }

        /// curl's read callback asks for at most `target.count` bytes.
        mutating func read(into target: UnsafeMutableRawBufferPointer) -> Read {
            if isClosed { return .failed(ServiceError(.cancelled, "The request ended.")) }
            guard let first = chunks.first else {
                switch end {
                case nil:
                    readerPaused = true
                    return .pause
                case .success: return .end
                case .failure(let error): return .failed(error)
                }
            }
            let count = min(target.count, first.count - offset)
            guard count > 0 else { return .pause }
            first.withUnsafeBytes { source in
                target.baseAddress!.copyMemory(from: source.baseAddress! + offset, byteCount: count)
            }
            offset += count
            buffered -= count
            if offset == first.count {
                _ = chunks.removeFirst()
                offset = 0
            }
            var resumeProducer = false
            if producerWaits && buffered <= lowWater {
                producerWaits = false
                resumeProducer = true
            }
            return .bytes(count, resumeProducer: resumeProducer)
        }

        /// Whether curl may start the body again from byte 0 (it rewinds when it resends on a
        /// fresh connection): only while nothing has been read.
        var canRewindToStart: Bool { !isClosed && offset == 0 && buffered == produced }

        /// The transfer ended. Returns whether the producer waited for room (and must be told
        /// to stop).
        mutating func close() -> Bool {
            isClosed = true
            chunks = FIFO()
            buffered = 0
            offset = 0
            let wasWaiting = producerWaits
            producerWaits = false
            return wasWaiting
        }
    }
}
