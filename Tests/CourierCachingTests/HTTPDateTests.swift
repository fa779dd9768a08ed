import CourierCaching
import Foundation
import Testing

@Suite("HTTP dates (RFC 9110, 5.6.7)")
struct HTTPDateTests {
    @Test(
        "the three forms parse to the same instant",
        arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"])
    func threeForms(_ text: String) {
        #expect(HTTPDate.parse(text) == Date(timeIntervalSince1970: 784_111_777))
    }

    /// Found by `scripts/fuzz.sh date`: a year too long for the day count overflowed (a trap,
    /// from any `Date`, `Expires` or `Last-Modified` a server sent).
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
