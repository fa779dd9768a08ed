import FoundationEssentials

/// The common shape of ISO 8601 timestamps, read straight from the bytes:
/// `YYYY-MM-DDTHH:MM:SS`, an optional fraction of up to 9 digits, then `Z`, `±HH:MM` or
/// `±HHMM`. Anything else (and years before 1600, where Foundation switches to the Julian
/// calendar) returns nil so that the caller falls back to Foundation's parser, which keeps
/// the results identical.
enum ISO8601 {
    static func date(_ text: UnsafePointer<UInt8>, length: Int) -> Date? {
        guard length >= 20 else { return nil }
        @inline(__always) func digits(_ offset: Int, _ count: Int) -> Int? {
            var value = 0
            for index in offset..<offset + count {
                let digit = text[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
            }
            return value
        }
        guard let year = digits(0, 4), text[4] == UInt8(ascii: "-"), let month = digits(5, 2),
            text[7] == UInt8(ascii: "-"),
            let day = digits(8, 2), text[10] == UInt8(ascii: "T"), let hour = digits(11, 2),
            text[13] == UInt8(ascii: ":"),
            let minute = digits(14, 2), text[16] == UInt8(ascii: ":"), let second = digits(17, 2),
            year >= 1600, (1...12).contains(month), day >= 1, day <= daysIn(month, year), hour < 24, minute < 60,
            second < 60
        else { return nil }
        var index = 19
        var nanoseconds = 0
        if text[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < length, text[index] &- UInt8(ascii: "0") < 10 { index += 1 }
            let count = index - start
            guard count >= 1, count <= 9, let fraction = digits(start, count) else { return nil }
            nanoseconds = fraction
            for _ in count..<9 { nanoseconds *= 10 }
        }
        guard index < length else { return nil }
        var offset = 0
        switch text[index] {
        case UInt8(ascii: "Z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign = text[index] == UInt8(ascii: "-") ? -1 : 1
            let colon = index + 3 < length && text[index + 3] == UInt8(ascii: ":")
            let minutesAt = colon ? index + 4 : index + 3
            guard minutesAt + 2 <= length, let hours = digits(index + 1, 2), let minutes = digits(minutesAt, 2),
                hours < 24, minutes < 60
            else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
            index = minutesAt + 2
        default:
            return nil
        }
        guard index == length else { return nil }
        let days = daysSince1970(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        let sinceReference = Double(seconds - 978_307_200)
        guard nanoseconds > 0 else { return Date(timeIntervalSinceReferenceDate: sinceReference) }
        return Date(timeIntervalSinceReferenceDate: sinceReference + Double(nanoseconds) / 1_000_000_000)
    }

    private static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    private static func daysIn(_ month: Int, _ year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar.
    private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = shiftedYear / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
