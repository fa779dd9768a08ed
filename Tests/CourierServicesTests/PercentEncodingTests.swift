import CourierCore
import CourierServices
import Foundation
import Testing

/// The one percent-encoding helper every layer uses (`Endpoint`, API keys, form bodies, HAR,
/// `MockTransport`): its edge cases.
@Suite("Percent-encoding")
struct PercentEncodingTests {
    @Test("query components keep only the unreserved characters")
    func queryComponents() {
        #expect(PercentEncoding.encodeQueryComponent("AZaz09-._~") == "AZaz09-._~")
        #expect(PercentEncoding.encodeQueryComponent("a b+c&d=e%f") == "a%20b%2Bc%26d%3De%25f")
        #expect(
            PercentEncoding.encodeQueryComponent(":/?#[]@!$'()*,;") == "%3A%2F%3F%23%5B%5D%40%21%24%27%28%29%2A%2C%3B")
        #expect(PercentEncoding.encodeQueryComponent("") == "")
    }

    @Test("UTF-8 is encoded byte by byte, in upper-case hex, and decodes back")
    func utf8() {
        #expect(PercentEncoding.encodeQueryComponent("é") == "%C3%A9")
        #expect(PercentEncoding.encodeQueryComponent("日本") == "%E6%97%A5%E6%9C%AC")
        #expect(PercentEncoding.encodeQueryComponent("👩‍💻") == "%F0%9F%91%A9%E2%80%8D%F0%9F%92%BB")
        for text in ["é", "日本", "👩‍💻", "a b+c&d=e%f", "100%", "%%", "~"] {
            #expect(PercentEncoding.decode(PercentEncoding.encodeQueryComponent(text)) == text)
        }
    }

    @Test("the byte sets that build request targets hold exactly the bytes the predicates keep")
    func byteSets() {
        for value in 0...255 {
            let byte = UInt8(value)
            #expect(PercentEncoding.ByteSet.unreserved.contains(byte) == PercentEncoding.isUnreserved(byte), "\(value)")
            #expect(PercentEncoding.ByteSet.path.contains(byte) == PercentEncoding.isPathCharacter(byte), "\(value)")
        }
        var target: [UInt8] = []
        let path = Array("/a b/é;x=1".utf8)
        path.withUnsafeBufferPointer { PercentEncoding.append($0, to: &target, keeping: .path) }
        #expect(String(decoding: target, as: UTF8.self) == PercentEncoding.encodePath("/a b/é;x=1"))
        #expect(String(decoding: target, as: UTF8.self) == "/a%20b/%C3%A9;x=1")
    }

    @Test("paths keep slashes, sub-delimiters and existing escapes")
    func paths() {
        #expect(PercentEncoding.encodePath("/a b/c+d;e=f@g:h") == "/a%20b/c+d;e=f@g:h")
        #expect(PercentEncoding.encodePath("/already%20encoded/é") == "/already%20encoded/%C3%A9")
        #expect(PercentEncoding.encodePath("/q?x#y") == "/q%3Fx%23y")
    }

    @Test("form components write a space as + and a + as %2B; decoding can read + as a space")
    func forms() {
        #expect(PercentEncoding.encodeFormComponent("a b+c") == "a+b%2Bc")
        #expect(PercentEncoding.decode("a+b%2Bc", plusIsSpace: true) == "a b+c")
        #expect(PercentEncoding.decode("a+b%2Bc") == "a+b+c")
    }

    @Test("decoding is lenient: a bad escape stays as written, bad UTF-8 becomes U+FFFD")
    func lenientDecoding() {
        #expect(PercentEncoding.decode("%") == "%")
        #expect(PercentEncoding.decode("%4") == "%4")
        #expect(PercentEncoding.decode("%zz%41") == "%zzA")
        #expect(PercentEncoding.decode("%+1") == "%+1")  // `UInt8("+1", radix: 16)` would take it
        #expect(PercentEncoding.decode("%e9%C3%A9") == "\u{FFFD}é")
        #expect(PercentEncoding.decode("%41%62c"[...]) == "Abc")
        #expect(PercentEncoding.decode("plain") == "plain")
    }

    @Test("a target byte that must be encoded: space, controls, DEL and non-ASCII")
    func targetBytes() {
        #expect(PercentEncoding.mustBeEncodedInTarget(0x20))
        #expect(PercentEncoding.mustBeEncodedInTarget(0x0A))
        #expect(PercentEncoding.mustBeEncodedInTarget(0x7F))
        #expect(PercentEncoding.mustBeEncodedInTarget(0xC3))
        #expect(!PercentEncoding.mustBeEncodedInTarget(UInt8(ascii: "%")))
        #expect(!PercentEncoding.mustBeEncodedInTarget(UInt8(ascii: "~")))
    }

    @Test("Endpoint, an API key and a form body encode alike")
    func callersAgree() async throws {
        let endpoint = Endpoint(
            "https://api.example.com", path: "/v1/a b", query: [URLQueryItem(name: "q", value: "a+b é")])
        #expect(endpoint.description == "https://api.example.com/v1/a%20b?q=a%2Bb%20%C3%A9")
        var request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/v1")
        try await APIKeyDecorator(key: "k+y é", in: .queryItem("api key")).decorate(&request)
        #expect(request.path == "/v1?api%20key=k%2By%20%C3%A9")
        let form = RequestBody.form(["a b": "c+d é"])
        guard case .bytes(let data) = form.storage else {
            Issue.record("a form body is bytes")
            return
        }
        #expect(String(decoding: data, as: UTF8.self) == "a+b=c%2Bd+%C3%A9")
    }
}
