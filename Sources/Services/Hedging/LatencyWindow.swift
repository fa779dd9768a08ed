/// Latencies of the last while, as a histogram with four buckets per doubling (each bucket's
/// bound within a fifth of what it holds), from which a quantile is read: what a host's p95
/// for ``Hedging`` is taken from.
///
/// Two generations of half the window each: a quantile reads both, and a generation older
/// than the window is emptied, so the estimate follows the host within a window without
/// keeping each sample. Time is a `Duration` since any fixed origin.
struct LatencyWindow: Sendable {
    /// Buckets per histogram: up to 2^31 µs (some 36 minutes); longer latencies count in the last.
    static let bucketCount = 128

    private let generationLength: Duration
    private var current = [Int](repeating: 0, count: bucketCount)
    private var previous = [Int](repeating: 0, count: bucketCount)
    /// The number of the current generation (time divided by the generation's length).
    private var generation: Int64 = 0

    init(window: Duration) {
        generationLength = max(window, .milliseconds(10)) / 2
    }

    /// Counts a latency at `now`.
    mutating func add(_ latency: Duration, at now: Duration) {
        advance(to: now)
        current[Self.bucket(microseconds: Self.microseconds(latency))] += 1
    }

    /// The latency at `quantile` (0...1) of the window ending at `now`: the bound of the bucket
    /// that holds it; nil with fewer than `minimumSamples` latencies.
    mutating func quantile(_ quantile: Double, at now: Duration, minimumSamples: Int) -> Duration? {
        advance(to: now)
        let total = current.reduce(0, +) + previous.reduce(0, +)
        guard total >= max(minimumSamples, 1) else { return nil }
        let rank = min(max(Int((quantile * Double(total)).rounded(.up)), 1), total)
        var seen = 0
        for bucket in 0..<Self.bucketCount {
            seen += current[bucket] + previous[bucket]
            if seen >= rank { return .microseconds(Self.upperBound(ofBucket: bucket)) }
        }
        return .microseconds(Self.upperBound(ofBucket: Self.bucketCount - 1))
    }

    /// Whether nothing is counted any more at `now`.
    mutating func isEmpty(at now: Duration) -> Bool {
        advance(to: now)
        return !current.contains { $0 > 0 } && !previous.contains { $0 > 0 }
    }

    /// The bucket of a latency of `microseconds`: below 4 µs, one per microsecond; from there,
    /// four per power of two (the power's exponent, then the next two bits).
    static func bucket(microseconds: Int64) -> Int {
        let value = max(microseconds, 0)
        guard value >= 4 else { return Int(value) }
        let exponent = Int64.bitWidth - 1 - value.leadingZeroBitCount
        let quarter = Int((value >> (exponent - 2)) & 3)
        return min(exponent * 4 + quarter, bucketCount - 1)
    }

    /// The largest latency, in microseconds, that `bucket` holds.
    static func upperBound(ofBucket bucket: Int) -> Int64 {
        guard bucket >= 8 else { return Int64(bucket) }
        let exponent = Int64(bucket / 4)
        let quarter = Int64(bucket % 4)
        return ((4 + quarter + 1) << (exponent - 2)) - 1
    }

    private static func microseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return seconds > 1_000_000_000 ? Int64.max / 2 : seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }

    /// Moves to `now`'s generation, emptying what fell out of the window.
    private mutating func advance(to now: Duration) {
        let number = max(Int64(now / generationLength), generation)
        if number == generation { return }
        if number == generation + 1 {
            swap(&current, &previous)
        } else {
            for index in 0..<Self.bucketCount { previous[index] = 0 }
        }
        for index in 0..<Self.bucketCount { current[index] = 0 }
        generation = number
    }
}
