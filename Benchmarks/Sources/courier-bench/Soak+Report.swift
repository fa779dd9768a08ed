import Foundation

extension SoakRun {
    /// Prints the outcomes by code, the samples and the server's answers, adds them to `report`
    /// (scenario `soak`), and returns why the soak failed (empty when it passed).
    func report(to report: Report) -> [String] {
        var failures = outcomes.failures + samples.failures
        if !shutdownEnded { failures.append("the transport's shutdown did not end within 10 s") }
        failures += sanity
        let label = "soak c=\(options.concurrency)"
        let loads = Double(outcomes.ended)

        print(" outcomes (each load after its retries)")
        for (outcome, count) in outcomes.outcomes.sorted(by: { $0.value > $1.value }) {
            print(
                "  " + outcome.padded(30) + "\(count)".leftPadded(9)
                    + String(format: "  %5.1f%%", Double(count) * 100 / loads))
            report.append(Figure(scenario: label, subject: "outcome: \(outcome)", unit: "loads", count: Double(count)))
        }
        if outcomes.ended < options.loads {
            print("  (stopped at the --soak-seconds bound after \(outcomes.ended) of \(options.loads) loads)")
        }
        if !outcomes.overdue.isEmpty { print("  \(lateEndings) of the overdue loads ended once cancelled") }

        print(" this process".padded(22) + "fds".leftPadded(8) + "threads".leftPadded(9) + "RSS MB".leftPadded(9))
        let rows: [(String, ProcessSample?)] = [
            ("before", samples.before), ("at 10%", samples.atTenPercent), ("at the end", samples.atEnd),
            ("after shutdown", samples.afterShutdown), ("peak", samples.peak),
        ]
        for (name, sample) in rows {
            guard let sample else { continue }
            print(
                "  " + name.padded(20) + "\(sample.fileDescriptors)".leftPadded(8) + "\(sample.threads)".leftPadded(9)
                    + String(format: "%.1f", sample.residentMegabytes).leftPadded(9))
        }
        print(
            "  limits: at the end at most \(SoakSamples.extraFileDescriptors) fds and \(SoakSamples.extraThreads) threads"
                + " more than at 10%, RSS at most \(Int(SoakSamples.residentGrowth * 100))% more;"
                + " after shutdown at most \(SoakSamples.extraFileDescriptorsAfterShutdown) fds more than before")
        addSamples(to: report, label: label)

        let perLoad = Double(server.requests) / max(loads, 1)
        print(
            " server: \(server.requests) requests (\(String(format: "%.2f", perLoad)) per load) on \(server.connections) connections,"
                + String(format: " %.1f s CPU", server.cpuSeconds))
        for fault in Fault.allCases {
            let count = server.faults[fault.rawValue] ?? 0
            print("  " + fault.rawValue.padded(30) + "\(count)".leftPadded(9))
            report.append(
                Figure(
                    scenario: label, subject: "server answer: \(fault.rawValue)", unit: "answers", count: Double(count))
            )
        }

        let rate = loadsPerSecond
        print(
            String(
                format: " %d loads in %.1f s: %.0f loads/s, %.0f µs CPU per load; slowest load %.2f s", outcomes.ended,
                seconds, rate, cpuSeconds * 1e6 / max(loads, 1), outcomes.slowest.seconds))
        var notes: [String: Double] = [
            "loads": loads, "seconds": seconds, "seed": Double(options.seed),
            "server requests": Double(server.requests),
            "slowest load s": outcomes.slowest.seconds,
            "µs CPU/load": cpuSeconds * 1e6 / max(loads, 1), "server CPU s": server.cpuSeconds,
            "passed": failures.isEmpty ? 1 : 0,
        ]
        notes["overdue"] = Double(outcomes.overdue.count)
        notes["wrong bodies"] = Double(outcomes.wrongBodies.count)
        report.append(
            Figure(
                scenario: label, subject: "load() against faults", unit: "loads/s", median: rate, min: rate, max: rate,
                notes: notes))
        return failures
    }

    /// A soak that meets no fault, or only faults, proves nothing: about 80% of the answers are
    /// good and retries save some of the rest, so fewer than half the loads succeeding, or a
    /// fault never served in a run of 1,000 loads or more, means the server or the client is broken.
    private var sanity: [String] {
        var reasons: [String] = []
        let successes = outcomes.outcomes[SoakTally.success] ?? 0
        if successes * 2 < outcomes.ended {
            reasons.append("only \(successes) of \(outcomes.ended) loads succeeded")
        }
        let missing = Fault.allCases.filter { (server.faults[$0.rawValue] ?? 0) == 0 }
        if outcomes.ended >= 1_000, !missing.isEmpty {
            reasons.append("the server never answered with \(missing.map(\.rawValue).joined(separator: ", "))")
        }
        return reasons
    }

    private func addSamples(to report: Report, label: String) {
        let measures: [(String, String, (ProcessSample) -> Double)] = [
            ("open file descriptors", "fds", { Double($0.fileDescriptors) }),
            ("threads", "threads", { Double($0.threads) }),
            ("resident memory", "MB", { $0.residentMegabytes }),
        ]
        for (subject, unit, measure) in measures {
            let values = samples.periodic.map(measure)
            var notes = ["before": measure(samples.before), "peak": measure(samples.peak)]
            notes["at 10%"] = samples.atTenPercent.map(measure)
            notes["at end"] = samples.atEnd.map(measure)
            notes["after shutdown"] = samples.afterShutdown.map(measure)
            let end = samples.atEnd.map(measure) ?? 0
            report.append(
                Figure(
                    scenario: label, subject: subject, unit: unit, median: end, min: values.min() ?? end,
                    max: values.max() ?? end, notes: notes))
        }
    }
}

extension Figure {
    /// A count: one value, no range.
    init(scenario: String, subject: String, unit: String, count: Double) {
        self.init(scenario: scenario, subject: subject, unit: unit, median: count, min: count, max: count)
    }
}
