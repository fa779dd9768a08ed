import FuzzDecoding

// libFuzzer target: the response-body inflater (gzip, zlib-wrapped deflate, raw deflate). The input's form and the invariants are FuzzDecoding's.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    fuzzDecoder(start, count, .gzipOrDeflate)
    return 0
}
