import CourierCaching
import Foundation
import Testing

@Suite("HTTP dates: the three forms of RFC 9110, section 5.6.7, and nothing else")
struct HTTPDateTests {
    let expected = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test(
        "IMF-fixdate, RFC 850 and asctime; names in any letter case",
        arguments: [
            "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
            "Sun, 06 Nov 1994 08:49:37 gmt", "SUN, 06 NOV 1994 08:49:37 Gmt", "sunday, 06-nov-94 08:49:37 GMT",
        ])
    func accepted(text: String) {
        #expect(HTTPDate.parse(text) == expected)
    }

    @Test(
        "anything else is nil",
        arguments: [
            "Sun 06 Nov 1994 08:49:37 GMT",  // no comma
            "Sun,  06 Nov 1994 08:49:37 GMT",  // doubled space
            "Sun, 06 Nov 1994  08:49:37 GMT",
            "Sun, 06-Nov-1994 08:49:37 GMT",  // RFC 850 dashes in an IMF-fixdate
            "Sunday, 06 Nov 1994 08:49:37 GMT",  // long day name, IMF layout
            "Sun, 06-Nov-94 08:49:37 GMT",  // short day name, RFC 850 layout
            "Sun, 06 Nov 1994 8:49:37 GMT",  // one-digit hour
            "Sun, 6 Nov 1994 08:49:37 GMT",  // one-digit day
            "Sun, 06 Nov 94 08:49:37 GMT",  // two-digit year
            "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun Nov 6 08:49:37 1994",
            "Xyz, 06 Nov 1994 08:49:37 GMT", " Sun, 06 Nov 1994 08:49:37 GMT", "0", "", "Sun, ",
        ])
    func rejected(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test("format and parse agree")
    func roundTrip() {
        for seconds in stride(from: -86_400 * 365.0, through: 4_000_000_000, by: 7_777_777) {
            let date = Date(timeIntervalSince1970: seconds.rounded(.down))
            if date >= Date(timeIntervalSince1970: -2_208_988_800) {
                #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
            }
        }
    }

    /// Found by `scripts/fuzz.sh date`: a year too long for the day count overflowed (a trap,
    /// from any `Date`, `Expires` or `Last-Modified` a server sent), and the last leap second
    /// of 9999 fell in a year no four-digit date can say back.
    @Test(
        "a year beyond four digits is not a date (and no overflow)",
        arguments: [
            "Sun, 06 Nov 99999999999999999 08:49:37 GMT", "Sun, 06 Nov 9999999999999 08:49:37 GMT",
            "Sun Nov  6 08:49:37 999999999999999", "Sunday, 06-Nov-9223372036854775807 08:49:37 GMT",
            "Sun, 06 Nov 10000 08:49:37 GMT", "Fri, 31 Dec 9999 23:59:60 GMT",
        ])
    func hugeYears(_ text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test("the last four-digit second formats and parses back")
    func lastSecond() throws {
        let date = try #require(HTTPDate.parse("Fri, 31 Dec 9999 23:59:59 GMT"))
        #expect(HTTPDate.format(date) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
    }
}
