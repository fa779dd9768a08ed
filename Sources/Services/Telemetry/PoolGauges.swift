internal import CourierCore
internal import CourierTransport
internal import Metrics

/// The pool gauges a coordinator records every ``RequestCoordinator/Configuration/poolGaugeInterval``
/// (their names and dimensions are listed there). Remembers the series it recorded, so that one
/// that goes away is recorded as 0 once instead of keeping its last value.
struct PoolGauges {
    static let connections = "courier.pool.connections"
    static let connecting = "courier.pool.connecting"
    static let transfers = "courier.pool.transfers"
    static let loadsWaiting = "courier.host.loads_waiting"

    /// One gauge: its label and dimensions.
    struct Series: Hashable {
        var label: String
        var dimensions: [String]

        init(_ label: String, _ dimensions: KeyValuePairs<String, String>) {
            self.label = label
            self.dimensions = dimensions.flatMap { [$0.key, $0.value] }
        }

        var pairs: [(String, String)] {
            stride(from: 0, to: dimensions.count, by: 2).map { (dimensions[$0], dimensions[$0 + 1]) }
        }
    }

    private var reported: Set<Series> = []

    /// The values of every series for one reading.
    static func values(pool: ConnectionPoolSnapshot?, waitingByHost: [String: Int]) -> [Series: Int] {
        var values: [Series: Int] = [:]
        for loop in pool?.loops ?? [] {
            let index = "\(loop.index)"
            for (origin, counts) in loop.connections {
                values[Series(connections, ["origin": origin, "state": "in_use", "loop": index])] = counts.inUse
                values[Series(connections, ["origin": origin, "state": "idle", "loop": index])] = counts.idle
            }
            values[Series(connecting, ["loop": index])] = loop.connecting
            values[Series(transfers, ["state": "running", "loop": index])] = loop.transfersRunning
            values[Series(transfers, ["state": "waiting", "loop": index])] = loop.transfersWaiting
        }
        for (host, waiting) in waitingByHost {
            values[Series(loadsWaiting, ["host": host])] = waiting
        }
        return values
    }

    /// Records one reading through `factory`, and 0 for the series the last one had and this
    /// one has not.
    mutating func record(pool: ConnectionPoolSnapshot?, waitingByHost: [String: Int], factory: any MetricsFactory) {
        let values = Self.values(pool: pool, waitingByHost: waitingByHost)
        for (series, value) in values {
            Gauge(label: series.label, dimensions: series.pairs, factory: factory).record(value)
        }
        for series in reported where values[series] == nil {
            Gauge(label: series.label, dimensions: series.pairs, factory: factory).record(0)
        }
        reported = Set(values.keys)
    }

    /// Records 0 for every series the last reading had: what a coordinator that shut down
    /// leaves behind.
    mutating func clear(factory: any MetricsFactory) {
        for series in reported {
            Gauge(label: series.label, dimensions: series.pairs, factory: factory).record(0)
        }
        reported = []
    }

    /// The shortest interval between two readings: a shorter one (or zero) would keep every
    /// loop answering censuses.
    static let minimumInterval: Duration = .milliseconds(10)

    /// Records a reading every `interval` (at least ``minimumInterval``) until the task is
    /// cancelled, then 0 for every series it recorded. `factory` nil: the global one, read each
    /// time (it may be bootstrapped after the coordinator is made).
    static func start(
        every interval: Duration, transport: CurlTransport?, hostQueue: HostQueue?, factory: (any MetricsFactory)?
    ) -> Task<Void, Never> {
        let interval = max(interval, minimumInterval)
        return Task {
            var gauges = PoolGauges()
            while true {
                let pool = await transport?.poolSnapshot()
                guard !Task.isCancelled else { break }
                gauges.record(
                    pool: pool, waitingByHost: hostQueue?.waitingByHost ?? [:],
                    factory: factory ?? MetricsSystem.factory)
                do { try await Task.sleep(for: interval) } catch { break }
            }
            gauges.clear(factory: factory ?? MetricsSystem.factory)
        }
    }
}
