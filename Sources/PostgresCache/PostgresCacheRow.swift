#if PostgreSQL
internal import CChecksum
internal import CourierCaching
internal import FoundationEssentials
internal import HTTPTypes

/// One entry as the table's columns hold it, with the checksum that proves a row intact.
///
/// The checksum (CRC-32C) covers every column a reader trusts: the full key, the status, the
/// times, the expiry, the `Vary` digest, the header fields and the body. Times are stored as
/// seconds since 1970 in `double precision`, so that they read back bit for bit.
struct PostgresCacheRow: Sendable {
    var key: String
    var variant: String?
    var status: Int16
    /// The header fields, encoded by ``encodeFields(_:)``.
    var fields: Data
    var body: Data
    var requestTime: Double
    var responseTime: Double
    var expiresAt: Double?
    var checksum: Int64
    /// When a soft purge marked the row stale (set by a statement, so outside the checksum).
    var purgedAt: Double?
    /// SHA-256 of the key's URL, and the response's tags: what purges look rows up by (both
    /// derived from checksummed columns when written).
    var urlDigest: Data { Data(SHA256.hash(CacheKey.url(ofRaw: key).utf8)) }
    var tags: [String] = []

    /// Why a row cannot be trusted (the store removes it).
    enum Defect: Error, Equatable { case checksumMismatch, malformedFields, badStatus }

    init(_ response: CachedResponse, key: CacheKey) {
        self.key = key.rawValue
        variant = response.variant
        status = Int16(clamping: response.status.code)
        fields = Self.encodeFields(response.headerFields)
        body = response.body
        requestTime = response.requestTime.timeIntervalSince1970
        responseTime = response.responseTime.timeIntervalSince1970
        expiresAt = response.expiresAt?.timeIntervalSince1970
        purgedAt = response.purgedAt?.timeIntervalSince1970
        tags = response.tags
        checksum = 0
        checksum = computedChecksum
    }

    init(
        key: String, variant: String?, status: Int16, fields: Data, body: Data, requestTime: Double,
        responseTime: Double, expiresAt: Double?, checksum: Int64, purgedAt: Double? = nil
    ) {
        self.purgedAt = purgedAt
        self.key = key
        self.variant = variant
        self.status = status
        self.fields = fields
        self.body = body
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.expiresAt = expiresAt
        self.checksum = checksum
    }

    /// Bytes the row costs against the store's size bound: key, fields, body and a fixed overhead.
    var size: Int64 { Int64(key.utf8.count + fields.count + body.count + 96) }

    /// The response, after checking the checksum and every field.
    func response() throws(Defect) -> CachedResponse {
        guard computedChecksum == checksum else { throw .checksumMismatch }
        guard (100...999).contains(status) else { throw .badStatus }  // HTTPResponse.Status traps past 999
        var response = CachedResponse(
            status: HTTPResponse.Status(code: Int(status)), headerFields: try Self.decodeFields(fields), body: body,
            requestTime: Date(timeIntervalSince1970: requestTime),
            responseTime: Date(timeIntervalSince1970: responseTime),
            expiresAt: expiresAt.map { Date(timeIntervalSince1970: $0) }, variant: variant)
        // Not covered by the checksum: a mark that is not a time reads as one made at the
        // response (stale at once), never as a fresh entry.
        response.purgedAt = purgedAt.map { Date(timeIntervalSince1970: $0.isFinite ? $0 : responseTime) }
        return response
    }

    /// CRC-32C over the columns, each length-prefixed so that bytes cannot move between them.
    var computedChecksum: Int64 {
        var crc: UInt32 = 0
        func add(_ bytes: some Collection<UInt8>) {
            var length = UInt64(bytes.count).littleEndian
            crc = withUnsafeBytes(of: &length) { courier_crc32c(crc, $0.baseAddress, $0.count) }
            crc = Array(bytes).withUnsafeBytes { courier_crc32c(crc, $0.baseAddress, $0.count) }
        }
        func add<T: FixedWidthInteger>(_ value: T) {
            var little = value.littleEndian
            crc = withUnsafeBytes(of: &little) { courier_crc32c(crc, $0.baseAddress, $0.count) }
        }
        add(key.utf8)
        add(variant.map { Array($0.utf8) } ?? [0xFF])
        add(status)
        add(requestTime.bitPattern)
        add(responseTime.bitPattern)
        add(expiresAt.map { $0.bitPattern } ?? UInt64.max)
        add(expiresAt == nil ? UInt8(0) : 1)
        fields.withUnsafeBytes { crc = courier_crc32c(crc, $0.baseAddress, $0.count) }
        body.withUnsafeBytes { crc = courier_crc32c(crc, $0.baseAddress, $0.count) }
        add(UInt64(fields.count))
        add(UInt64(body.count))
        return Int64(crc)
    }

    /// Header fields as bytes: for each field, a u16 name length, the name, a u32 value length
    /// and the value (little-endian).
    static func encodeFields(_ fields: HTTPFields) -> Data {
        var bytes: [UInt8] = []
        for field in fields {
            let name = Array(field.name.rawName.utf8.prefix(Int(UInt16.max)))
            let value = Array(field.value.utf8)
            withUnsafeBytes(of: UInt16(name.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: name)
            withUnsafeBytes(of: UInt32(clamping: value.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: value)
        }
        return Data(bytes)
    }

    static func decodeFields(_ data: Data) throws(Defect) -> HTTPFields {
        let bytes = [UInt8](data)
        var offset = 0
        func take(_ count: Int) throws(Defect) -> ArraySlice<UInt8> {
            guard count >= 0, bytes.count - offset >= count else { throw .malformedFields }
            defer { offset += count }
            return bytes[offset..<(offset + count)]
        }
        func length(_ size: Int) throws(Defect) -> Int {
            try take(size).reversed().reduce(0) { $0 << 8 | Int($1) }
        }
        var fields = HTTPFields()
        while offset < bytes.count {
            let name = String(decoding: try take(try length(2)), as: UTF8.self)
            let value = String(decoding: try take(try length(4)), as: UTF8.self)
            guard let fieldName = HTTPField.Name(name) else { throw .malformedFields }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        return fields
    }
}
#endif
