import CourierCore
import HTTPTypes
import Testing

/// `Codings.listed(in:_:ignoring:)`, which the cache (the transfer codings a stored entry keeps)
/// and the decoding error's note (the codings a body is still in) share.
@Suite struct CodingsTests {
    @Test(
        arguments: [
            (["gzip"], [], ["gzip"]),
            (["gzip, Identity,,x-Foo"], ["identity"], ["gzip", "x-Foo"]),
            (["\tcompress ,  chunked"], ["chunked", "identity"], ["compress"]),
            (["deflate", "CHUNKED", " br\t"], ["chunked"], ["deflate", "br"]),
            ([" , ,"], [], []),
            (["chunked", "identity"], ["chunked", "identity"], []),
            (["gzİp"], ["gzip"], ["gzİp"]),
            // The Kelvin sign folds to "k" in Unicode, never in ASCII: not chunked.
            (["chun\u{212A}ed"], ["chunked"], ["chun\u{212A}ed"]),
        ] as [([String], Set<String>, [String])])
    func theCodingsAreListedInOrderAsSpelled(lines: [String], ignored: Set<String>, listed: [String]) {
        var fields = HTTPFields()
        for line in lines { fields.append(HTTPField(name: .transferEncoding, value: line)) }
        #expect(Codings.listed(in: fields, .transferEncoding, ignoring: ignored).map(String.init) == listed)
    }

    @Test func aFieldThatIsAbsentListsNothing() {
        #expect(Codings.listed(in: [.contentType: "text/plain"], .contentEncoding).isEmpty)
    }
}
