import FoundationEssentials
import FuzzSupport
import HTTPTypes

// libFuzzer target: `Cache-Control` parsing and the RFC 9111 freshness rules over a fuzzed
// header block.
//
// Input: text. The whole input is also parsed as one `Cache-Control` value. As a block: the
// first line is `STATUS DELAY ELAPSED` (any part may be missing or junk: 200, 0, 0), then the
// response's header lines (`Name: value`), then after a blank line the request's header lines.
// The entry was requested at a fixed instant, arrived DELAY seconds later and is judged
// ELAPSED seconds after that.
//
// Invariants beyond "no crash": delta-seconds are within 0...2^31; lifetime and age are finite
// and not negative; `.fresh` only for a fresh entry; storable implies may-store; an entry
// stored with a request's variant matches that request unless it varies on `*`.
@testable import CourierCaching

func fields(_ lines: ArraySlice<Substring>) -> HTTPFields {
    var fields = HTTPFields()
    for line in lines {
        guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else { continue }
        fields.append(HTTPField(name: name, value: String(line[line.index(after: colon)...])))
    }
    return fields
}

func checkDirectives(_ control: CacheControl) {
    for name in control.directives.keys {
        check(!name.isEmpty, "an empty directive name")
        if case .seconds(let seconds) = control.seconds(name) {
            check((0...2_147_483_648).contains(seconds), "delta-seconds \(seconds) out of range")
        }
    }
    _ = (control.noStore, control.noCache, control.mustRevalidate, control.staleIfError, control.staleWhileRevalidate)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    checkDirectives(CacheControl(text))

    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        .map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
    let numbers = (lines.first ?? "").split(separator: " ").map { Int($0) }
    func number(_ index: Int, default value: Int, in range: ClosedRange<Int>) -> Int {
        guard index < numbers.count, let parsed = numbers[index] else { return value }
        return min(max(parsed, range.lowerBound), range.upperBound)
    }
    let status = number(0, default: 200, in: 100...999)
    let delay = TimeInterval(number(1, default: 0, in: 0...1_000_000_000))
    let elapsed = TimeInterval(number(2, default: 0, in: 0...1_000_000_000))
    let blank = lines.dropFirst().firstIndex(of: "") ?? lines.endIndex
    let responseFields = fields(lines[min(1, lines.count)..<blank])
    let requestFields = fields(lines[min(blank + 1, lines.count)...])
    checkDirectives(CacheControl(responseFields))

    let requested = Date(timeIntervalSince1970: 1_700_000_000)
    let request = HTTPRequest(
        method: .get, scheme: "https", authority: "example.com", path: "/", headerFields: requestFields)
    let response = HTTPResponse(status: .init(code: status), headerFields: responseFields)
    var entry = CachedResponse(
        status: response.status, headerFields: HTTPCacheRules.storedFields(of: response), body: Data("x".utf8),
        requestTime: requested, responseTime: requested + delay)
    entry.variant = HTTPCacheRules.variant(of: request, responseFields: entry.headerFields)
    let now = entry.responseTime + elapsed

    let freshness = HTTPCacheRules.freshness(of: entry, now: now)
    check(freshness.lifetime.isFinite && freshness.lifetime >= 0, "lifetime \(freshness.lifetime)")
    check(freshness.age.isFinite && freshness.age >= 0, "age \(freshness.age)")
    let decision = HTTPCacheRules.decide(entry, for: request, now: now)
    check(decision != .fresh || freshness.isFresh, "a stale entry was judged fresh")
    _ = HTTPCacheRules.mayServeOnError(entry, now: now)
    let storable = HTTPCacheRules.isStorable(request: request, response: response)
    check(!storable || HTTPCacheRules.mayStore(request: request, response: response), "storable but may not store")
    func isSpace(_ character: Character) -> Bool { character == " " || character == "\t" }
    let variesOnAll = entry.headerFields[values: .vary].contains { value in
        value.split(separator: ",").contains {
            $0.drop(while: isSpace).reversed().drop(while: isSpace).elementsEqual("*")
        }
    }
    if !variesOnAll {
        check(HTTPCacheRules.matchesVariant(entry, request: request), "an entry does not match its own request")
    }
    _ = HTTPCacheRules.conditionalFields(for: entry)
    let freshened = HTTPCacheRules.freshened(entry, with: response, requestTime: now, responseTime: now)
    check(freshened.body == entry.body, "a 304 changed the stored body")
    return 0
}
