package import FoundationEssentials

/// HTTP dates (RFC 9110, section 5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT` is produced; that
/// form, the obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and C's `asctime` form
/// (`Sun Nov  6 08:49:37 1994`) are accepted, to the byte (names in any letter case). Anything
/// else is `nil`, never a guess.
package enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

    /// Parses an HTTP date in one of the three forms RFC 9110 defines, exactly: one space
    /// between fields, two-digit day (`asctime`: space-padded), hour, minute and second, a
    /// comma after the day name where the form has one. Names (`Sun`, `Nov`, `GMT`) are matched
    /// case-insensitively. Anything else is nil: an invalid `Expires` then means already expired.
    package static func parse(_ text: some StringProtocol) -> Date? {
        let bytes = Array(String(text).utf8)
        if let comma = bytes.firstIndex(of: UInt8(ascii: ",")) {
            guard comma + 1 < bytes.count, bytes[comma + 1] == UInt8(ascii: " ") else { return nil }
            let name = lowered(bytes[..<comma])
            let rest = Array(bytes[(comma + 2)...])
            if comma == 3, shortDays.contains(name) { return imfFixdate(rest) }
            if longDays.contains(name) { return rfc850(rest) }
            return nil
        }
        return asctime(bytes)
    }

    /// `06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ b: [UInt8]) -> Date? {
        guard b.count == 24, b[2] == space, b[6] == space, b[11] == space, b[20] == space,
            lowered(b[21...]) == "gmt", let day = digits(b[0..<2]), let month = monthIndex(b[3..<6]),
            let year = digits(b[7..<11]), let time = clock(b[12..<20])
        else { return nil }
        return date(year: year, month: month, day: day, time: time)
    }

    /// `06-Nov-94 08:49:37 GMT` (obsolete).
    private static func rfc850(_ b: [UInt8]) -> Date? {
        guard b.count == 22, b[2] == dash, b[6] == dash, b[9] == space, b[18] == space, lowered(b[19...]) == "gmt",
            let day = digits(b[0..<2]), let month = monthIndex(b[3..<6]), let shortYear = digits(b[7..<9]),
            let time = clock(b[10..<18])
        else { return nil }
        // A fixed pivot (00-69 -> 20xx, 70-99 -> 19xx) rather than RFC 9110's 50-year
        // window: the form is obsolete and only old servers send it.
        return date(year: shortYear < 70 ? 2000 + shortYear : 1900 + shortYear, month: month, day: day, time: time)
    }

    /// `Sun Nov  6 08:49:37 1994` (C's `asctime`, obsolete).
    private static func asctime(_ b: [UInt8]) -> Date? {
        guard b.count == 24, shortDays.contains(lowered(b[0..<3])), b[3] == space, b[7] == space, b[10] == space,
            b[19] == space, let month = monthIndex(b[4..<7]), let time = clock(b[11..<19]),
            let year = digits(b[20..<24])
        else { return nil }
        let day = b[8] == space ? digits(b[9..<10]) : digits(b[8..<10])
        guard let day else { return nil }
        return date(year: year, month: month, day: day, time: time)
    }

    private static func date(year: Int, month: Int, day: Int, time: [Int]) -> Date? {
        // Four-digit years only (RFC 9110's `year = 4DIGIT`).
        guard (1...31).contains(day), (1900...9999).contains(year) else { return nil }
        let days = daysFromCivil(year: year, month: month + 1, day: day)
        let seconds = days * 86_400 + time[0] * 3600 + time[1] * 60 + time[2]
        // 9999-12-31 23:59:60 would be in year 10000, which no four-digit date can say back.
        guard seconds < 253_402_300_800 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    private static let space = UInt8(ascii: " ")
    private static let dash = UInt8(ascii: "-")
    private static let shortDays = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
    private static let longDays = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]

    private static func lowered(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    private static func digits(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    private static func monthIndex(_ bytes: ArraySlice<UInt8>) -> Int? { months.firstIndex(of: lowered(bytes)) }

    /// `HH:MM:SS`, two digits each.
    private static func clock(_ b: ArraySlice<UInt8>) -> [Int]? {
        let s = b.startIndex
        guard b.count == 8, b[s + 2] == UInt8(ascii: ":"), b[s + 5] == UInt8(ascii: ":"),
            let hour = digits(b[s..<s + 2]), let minute = digits(b[s + 3..<s + 5]),
            let second = digits(b[s + 6..<s + 8]),
            hour <= 23, minute <= 59, second <= 60
        else { return nil }
        return [hour, minute, second]
    }

    /// Formats `date` as an IMF-fixdate.
    package static func format(_ date: Date) -> String {
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
