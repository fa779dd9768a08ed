/// Two counts over a sliding window of time, in ten buckets that together span it, the oldest
/// emptied as time moves on: what a retry budget (loads, retries) and a circuit (attempts,
/// failures) count. Time is a `Duration` since any fixed origin; a time before the newest
/// bucket (clocks read out of order by two threads) counts in the newest.
struct WindowCounts: Sendable {
    static let bucketCount = 10

    private let bucketLength: Duration
    /// The counts per bucket, a ring indexed by the bucket's number modulo the count.
    private var first = [Int](repeating: 0, count: bucketCount)
    private var second = [Int](repeating: 0, count: bucketCount)
    /// The number of the newest bucket (time divided by the bucket length).
    private var newest: Int64 = 0

    /// Counts over `window` (10 ms at least: a public field may have been set past its
    /// initializer's bound).
    init(window: Duration) {
        bucketLength = max(window, .milliseconds(10)) / Self.bucketCount
    }

    /// Adds to the counts of `now`'s bucket.
    mutating func add(first addedFirst: Int = 0, second addedSecond: Int = 0, at now: Duration) {
        let slot = advance(to: now)
        first[slot] += addedFirst
        second[slot] += addedSecond
    }

    /// Both counts over the window ending at `now`.
    mutating func totals(at now: Duration) -> (first: Int, second: Int) {
        _ = advance(to: now)
        return (first.reduce(0, +), second.reduce(0, +))
    }

    /// Empties every bucket.
    mutating func clear() {
        for index in 0..<Self.bucketCount {
            first[index] = 0
            second[index] = 0
        }
    }

    /// Moves the window to `now`, emptying the buckets that fell out of it; returns the slot of
    /// `now`'s bucket.
    private mutating func advance(to now: Duration) -> Int {
        let number = max(Int64(now / bucketLength), newest)
        if number - newest >= Int64(Self.bucketCount) {
            clear()
        } else {
            var next = newest + 1
            while next <= number {
                let slot = Int(next % Int64(Self.bucketCount))
                first[slot] = 0
                second[slot] = 0
                next += 1
            }
        }
        newest = number
        return Int(number % Int64(Self.bucketCount))
    }
}
