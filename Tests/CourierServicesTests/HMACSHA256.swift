import CourierServices

/// HMAC-SHA256 (RFC 2104) over the project's ``SHA256``, for tests that check signatures.
enum HMACSHA256 {
    static func mac(key: some Sequence<UInt8>, message: some Sequence<UInt8>) -> [UInt8] {
        var block = Array(key)
        if block.count > 64 { block = SHA256.hash(block) }
        block += [UInt8](repeating: 0, count: 64 - block.count)
        var inner = SHA256()
        inner.update(block.map { $0 ^ 0x36 })
        inner.update(message)
        var outer = SHA256()
        outer.update(block.map { $0 ^ 0x5c })
        outer.update(inner.finalize())
        return outer.finalize()
    }

    static func hex(key: String, message: String) -> String {
        SHA256.hex(mac(key: Array(key.utf8), message: Array(message.utf8)))
    }
}
