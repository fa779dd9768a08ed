import Courier
import Foundation
import Glibc

/// One measured figure: the median of several runs, their range, and the ratio to a reference
/// measured in the same run.
struct Figure: Codable, Sendable {
    var scenario: String
    var subject: String
    var unit: String
    var median: Double
    var min: Double
    var max: Double
    var reference: String?
    var ratio: Double?
    var notes: [String: Double] = [:]
}

/// Collects figures, prints them as a table, writes them as JSON.
final class Report: @unchecked Sendable {
    // Only the main task touches the report: scenarios run one after another.
    private(set) var figures: [Figure] = []
    private var lastScenario = ""

    func section(_ title: String) {
        progress(nil)
        print("\n\(title)")
        print(String(repeating: "-", count: title.count))
    }

    /// Adds a figure from `samples`; the ratio is against `reference`'s median when given.
    @discardableResult
    func add(
        _ scenario: String, _ subject: String, unit: String, samples: [Double], reference: Figure? = nil,
        notes: [String: Double] = [:], higherIsBetter: Bool = true, ratioLabel: String = "vs"
    ) -> Figure {
        let sorted = samples.sorted()
        let median = sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        var figure = Figure(
            scenario: scenario, subject: subject, unit: unit, median: median, min: sorted.first ?? 0,
            max: sorted.last ?? 0, reference: reference?.subject, notes: notes)
        if let reference, reference.median > 0 {
            figure.ratio = higherIsBetter ? median / reference.median : reference.median / median
        }
        figures.append(figure)
        progress(nil)
        if scenario != lastScenario {
            print(" \(scenario)")
            lastScenario = scenario
        }
        var line = "  " + subject.padded(30) + format(median, unit).leftPadded(14) + " " + unit.padded(6)
        line += " (" + format(figure.min, unit) + "–" + format(figure.max, unit) + ")"
        if let ratio = figure.ratio, let reference {
            line += "  " + String(format: "%.2fx", ratio) + " \(ratioLabel) " + reference.subject
        }
        for (name, value) in notes.sorted(by: { $0.key < $1.key }) {
            line += "  \(name) " + String(format: "%.1f", value)
        }
        print(line)
        return figure
    }

    /// Adds a figure without printing it, for sections that print their own table.
    func append(_ figure: Figure) {
        figures.append(figure)
    }

    /// Starts a scenario with a line of its own (`detail` adds to its name).
    func scenario(_ name: String, detail: String) {
        progress(nil)
        print(" \(name) (\(detail))")
        lastScenario = name
    }

    func write(to path: String, machine: [String: String]) throws {
        struct Document: Codable {
            var date: String
            var machine: [String: String]
            var figures: [Figure]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let document = Document(date: ISO8601DateFormatter().string(from: Date()), machine: machine, figures: figures)
        try encoder.encode(document).write(to: URL(fileURLWithPath: path))
    }

    private func format(_ value: Double, _ unit: String) -> String {
        value >= 100 ? String(format: "%.0f", value) : String(format: "%.2f", value)
    }
}

/// A progress line on stderr when it is a terminal, replaced as the run goes on (nil clears it).
func progress(_ text: String?) {
    guard isatty(STDERR_FILENO) != 0 else { return }
    let line = text.map { "\r\u{1B}[K" + $0 } ?? "\r\u{1B}[K"
    FileHandle.standardError.write(Data(line.utf8))
}

extension String {
    func padded(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

/// The machine and the versions, for the JSON file.
func machineDescription(nginx: String?) -> [String: String] {
    var machine: [String: String] = ["cores": "\(ProcessInfo.processInfo.activeProcessorCount)"]
    if let cpu = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
        let model = cpu.split(separator: "\n").first(where: { $0.hasPrefix("model name") })
    {
        machine["cpu"] = model.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) }
    }
    machine["memoryGiB"] = String(format: "%.1f", Double(ProcessInfo.processInfo.physicalMemory) / Double(1 << 30))
    machine["os"] = ProcessInfo.processInfo.operatingSystemVersionString
    machine["curl"] = CurlFeatures.current.description
    machine["nginx"] = nginx ?? "absent"
    #if swift(>=6.3)
    machine["swift"] = "6.3 or later"
    #endif
    return machine
}
