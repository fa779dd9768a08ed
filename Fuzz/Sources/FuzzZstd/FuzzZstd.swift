import FuzzDecoding

// libFuzzer target: the zstd response-body decoder. The input's form and the invariants are FuzzDecoding's.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    fuzzDecoder(start, count, .zstd)
    return 0
}
