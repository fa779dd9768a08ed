/// A point on the continuous clock, held as the time since a fixed origin.
///
/// `ContinuousClock.Instant` is resilient: a struct that holds one (or an optional of one) is
/// copied, compared and destroyed through value witnesses, and each load's plan is copied
/// several times. A `Duration` has a fixed layout, so a struct of these stays a plain one (a
/// deadline in the load plan as an `Instant` cost some 7,000 instructions per load).
package struct Moment: Comparable, Hashable, Sendable {
    package var sinceOrigin: Duration

    private static let origin = ContinuousClock.now

    package init(_ instant: ContinuousClock.Instant) { sinceOrigin = Moment.origin.duration(to: instant) }
    private init(sinceOrigin: Duration) { self.sinceOrigin = sinceOrigin }

    /// Now, on the continuous clock.
    package static var now: Moment { Moment(ContinuousClock.now) }

    /// This moment as an instant of the continuous clock.
    package var instant: ContinuousClock.Instant { Moment.origin.advanced(by: sinceOrigin) }

    package static func + (moment: Moment, duration: Duration) -> Moment {
        Moment(sinceOrigin: moment.sinceOrigin + duration)
    }

    package static func - (later: Moment, earlier: Moment) -> Duration { later.sinceOrigin - earlier.sinceOrigin }

    package static func < (lhs: Moment, rhs: Moment) -> Bool { lhs.sinceOrigin < rhs.sinceOrigin }
}
