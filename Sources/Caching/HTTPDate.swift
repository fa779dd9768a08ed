public import FoundationEssentials

/// HTTP dates (RFC 9110, section 5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT` is produced; that
/// form, the obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and C's `asctime` form
/// (`Sun Nov  6 08:49:37 1994`) are accepted. Anything else is `nil`, never a guess.
public enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

    /// Parses an HTTP date.
    public static func parse(_ text: some StringProtocol) -> Date? {
        let parts = String(text).split(whereSeparator: { (c: Character) in c == " " || c == "," }).map(String.init)
        var day: Int?, month: Int?, year: Int?, time: [Int]?
        switch parts.count {
        case 6 where parts[5] == "GMT":  // IMF-fixdate: weekday, day month year time GMT
            (day, month, year, time) = (Int(parts[1]), monthIndex(parts[2]), Int(parts[3]), clock(parts[4]))
        case 4 where parts[3] == "GMT":  // RFC 850: weekday, dd-mon-yy time GMT
            let date = parts[1].split(separator: "-").map(String.init)
            guard date.count == 3, let shortYear = Int(date[2]) else { return nil }
            (day, month, time) = (Int(date[0]), monthIndex(date[1]), clock(parts[2]))
            // A fixed pivot (00-69 -> 20xx, 70-99 -> 19xx) rather than RFC 9110's 50-year
            // window: the form is obsolete and only old servers send it.
            year = shortYear < 100 ? (shortYear < 70 ? 2000 + shortYear : 1900 + shortYear) : shortYear
        case 5:  // asctime: weekday month day time year
            (month, day, time, year) = (monthIndex(parts[1]), Int(parts[2]), clock(parts[3]), Int(parts[4]))
        default:
            return nil
        }
        // Four-digit years only (RFC 9110's `year = 4DIGIT`): a longer one overflowed the day count.
        guard let day, let month, let year, let time, (1...31).contains(day), (1900...9999).contains(year) else {
            return nil
        }
        let days = daysFromCivil(year: year, month: month + 1, day: day)
        let seconds = days * 86_400 + time[0] * 3600 + time[1] * 60 + time[2]
        // 9999-12-31 23:59:60 would be in year 10000, which no four-digit date can say back.
        guard seconds < 253_402_300_800 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// Formats `date` as an IMF-fixdate.
    public static func format(_ date: Date) -> String {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civilFromDays(days)
        let weekday = weekdays[((days % 7) + 11) % 7]  // 1970-01-01 was a Thursday
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let monthName = months[month - 1].prefix(1).uppercased() + months[month - 1].dropFirst()
        return "\(weekday), \(two(day)) \(monthName) \(year) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    private static func monthIndex(_ text: String) -> Int? { months.firstIndex(of: text.lowercased()) }

    private static func clock(_ text: String) -> [Int]? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false).compactMap { Int($0) }
        guard fields.count == 3, (0...23).contains(fields[0]), (0...59).contains(fields[1]), (0...60).contains(fields[2])
        else { return nil }
        return fields
    }

    // Howard Hinnant's days-from-civil algorithms (proleptic Gregorian calendar).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
