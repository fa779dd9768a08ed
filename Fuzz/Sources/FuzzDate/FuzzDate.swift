import FoundationEssentials
import FuzzSupport

// libFuzzer target: HTTP dates (`Date`, `Expires`, `Last-Modified`, `If-Modified-Since`).
//
// Invariants beyond "no crash": a parsed date formats as an IMF-fixdate that parses back to
// the same instant, and formatting again gives the same text; the first eight bytes, read as a
// time offset, format to a date that parses back to the same whole second.
@testable import CourierCaching

func checkRoundTrip(_ date: Date) {
    let text = HTTPDate.format(date)
    guard let again = HTTPDate.parse(text) else { fatalError("fuzz invariant: \(text) (formatted) does not parse") }
    check(again.timeIntervalSince1970 == date.timeIntervalSince1970.rounded(.down), "\(text) parses to \(again)")
    check(HTTPDate.format(again) == text, "\(text) formats differently once parsed")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let text = String(decoding: bytes, as: UTF8.self)
    if let date = HTTPDate.parse(text) {
        check(date.timeIntervalSince1970.rounded(.down) == date.timeIntervalSince1970, "a fractional HTTP date")
        checkRoundTrip(date)
    }
    // A Substring, as the cache passes field values.
    _ = HTTPDate.parse(text.split(separator: "\n").first ?? "")
    if count >= 8 {
        // Seconds from 1900 to 9999, the years an HTTP date can hold here.
        let raw = bytes.loadUnaligned(as: UInt64.self)
        let span: UInt64 = 253_402_300_800 + 2_208_988_800
        checkRoundTrip(Date(timeIntervalSince1970: TimeInterval(Int64(raw % span) - 2_208_988_800)))
    }
    return 0
}
