internal import CChecksum
internal import FoundationEssentials
internal import HTTPTypes

/// The file format of one disk entry, version 2 (little-endian):
///
/// ```
/// 0   "CRCH"               magic
/// 4   u16 version          2
/// 6   u16 reserved         0
/// 8   u32 metadata length
/// 12  u32 CRC-32C of the metadata
/// 16  u64 body length
/// 24  u32 CRC-32C of the body
/// 28  u32 reserved         0
/// 32  metadata: key, status, times, expiry, variant, header fields[, soft purge time]
/// ..  body
/// ```
///
/// A reader checks magic, version, the lengths against the file's size, both checksums and the
/// full key; any mismatch makes the file a miss (and the cache removes it). Version 1 used
/// zlib's CRC-32; its files are read as another version, so a miss.
enum DiskEntryFile {
    static let magic: [UInt8] = Array("CRCH".utf8)
    static let version: UInt16 = 2
    static let prefixLength = 32

    /// Why a file could not be read as an entry.
    enum Defect: Error, Equatable {
        case tooShort, notOurs, lengthMismatch, checksumMismatch, malformedMetadata
        case otherVersion(UInt16)
    }

    /// The file's bytes: prefix and metadata in one array, the body after it (written with one `writev`).
    static func encode(_ response: CachedResponse, key: CacheKey) -> [UInt8] {
        var meta = ByteWriter()
        meta.string32(key.rawValue)
        meta.u16(UInt16(clamping: response.status.code))  // the code; the reason phrase is not kept
        meta.double(response.requestTime.timeIntervalSince1970)
        meta.double(response.responseTime.timeIntervalSince1970)
        meta.u8(response.expiresAt == nil ? 0 : 1)
        meta.double(response.expiresAt?.timeIntervalSince1970 ?? 0)
        meta.u8(UInt8(clamping: response.variant?.utf8.count ?? 0))
        meta.bytes(Array((response.variant ?? "").utf8.prefix(255)))
        meta.u32(UInt32(response.headerFields.count))
        for field in response.headerFields {
            meta.string16(field.name.rawName)
            meta.string32(field.value)
        }
        // Optional trailer, only on an entry a soft purge marked (so that files without one are
        // those of every earlier writer): u8 1, then the time as a double.
        if let purgedAt = response.purgedAt {
            meta.u8(1)
            meta.double(purgedAt.timeIntervalSince1970)
        }
        var out = ByteWriter()
        out.bytes(magic)
        out.u16(version)
        out.u16(0)
        out.u32(UInt32(meta.bytes.count))
        out.u32(crc(meta.bytes))
        out.u64(UInt64(response.body.count))
        out.u32(response.body.withUnsafeBytes { crc($0) })
        out.u32(0)
        out.bytes(meta.bytes)
        return out.bytes
    }

    /// The fixed prefix: lengths and checksums.
    struct Prefix {
        var metadataLength: Int
        var metadataCRC: UInt32
        var bodyLength: Int
        var bodyCRC: UInt32
        var fileLength: Int { prefixLength + metadataLength + bodyLength }
    }

    static func prefix(_ bytes: UnsafeRawBufferPointer) throws(Defect) -> Prefix {
        guard bytes.count >= prefixLength else { throw .tooShort }
        guard Array(bytes[0..<4]) == magic else { throw .notOurs }
        var reader = ByteReader(bytes, at: 4)
        let version = try reader.u16()
        guard version == self.version else { throw .otherVersion(version) }
        _ = try reader.u16()
        let metadataLength = Int(try reader.u32())
        let metadataCRC = try reader.u32()
        let bodyLength = try reader.u64()
        let bodyCRC = try reader.u32()
        guard bodyLength < UInt64(Int.max / 2) else { throw .lengthMismatch }
        return Prefix(
            metadataLength: metadataLength, metadataCRC: metadataCRC, bodyLength: Int(bodyLength), bodyCRC: bodyCRC)
    }

    /// Decodes a whole file; `nil` when it is intact but holds another key (a digest collision).
    static func decode(_ file: UnsafeRawBufferPointer, key: CacheKey) throws(Defect) -> CachedResponse? {
        let prefix = try prefix(file)
        guard file.count == prefix.fileLength else { throw .lengthMismatch }
        let body = UnsafeRawBufferPointer(rebasing: file[(prefixLength + prefix.metadataLength)...])
        guard crc(body) == prefix.bodyCRC else { throw .checksumMismatch }
        let metadata = try metadata(file, prefix)
        guard metadata.key == key.rawValue else { return nil }
        var response = CachedResponse(
            status: HTTPResponse.Status(code: metadata.status), headerFields: metadata.fields, body: Data(body),
            requestTime: metadata.requestTime, responseTime: metadata.responseTime, expiresAt: metadata.expiry,
            variant: metadata.variant)
        response.purgedAt = metadata.purgedAt
        return response
    }

    /// Reads the key and the header fields from a file's prefix and whole metadata, for a purge
    /// that names entries by URL or tag.
    static func identity(_ head: UnsafeRawBufferPointer) throws(Defect) -> (key: String, fields: HTTPFields) {
        let metadata = try metadata(head, try prefix(head))
        return (metadata.key, metadata.fields)
    }

    /// What a file says of its entry besides the body.
    struct Metadata {
        var key: String
        var status: Int
        var requestTime: Date
        var responseTime: Date
        var expiry: Date?
        var variant: String?
        var fields: HTTPFields
        var purgedAt: Date?
    }

    /// Reads the metadata that follows `prefix` in `head` (the body may follow or not), checked
    /// against its checksum.
    static func metadata(_ head: UnsafeRawBufferPointer, _ prefix: Prefix) throws(Defect) -> Metadata {
        guard head.count >= prefixLength + prefix.metadataLength else { throw .tooShort }
        let bytes = UnsafeRawBufferPointer(rebasing: head[prefixLength..<(prefixLength + prefix.metadataLength)])
        guard crc(bytes) == prefix.metadataCRC else { throw .checksumMismatch }
        var reader = ByteReader(bytes, at: 0)
        let key = try reader.string32()
        let status = Int(try reader.u16())
        guard (0...999).contains(status) else { throw .malformedMetadata }  // HTTPResponse.Status traps past 999
        let requestTime = Date(timeIntervalSince1970: try reader.double())
        let responseTime = Date(timeIntervalSince1970: try reader.double())
        let hasExpiry = try reader.u8() == 1
        let expiry = try reader.double()
        let variantLength = Int(try reader.u8())
        let variant = variantLength == 0 ? nil : String(decoding: try reader.bytes(variantLength), as: UTF8.self)
        let fieldCount = Int(try reader.u32())
        var fields = HTTPFields()
        fields.reserveCapacity(min(fieldCount, 256))
        for _ in 0..<fieldCount {
            let name = try reader.string16()
            let value = try reader.string32()
            guard let fieldName = HTTPField.Name(name) else { throw .malformedMetadata }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        var purgedAt: Date?
        if !reader.isAtEnd {
            guard try reader.u8() == 1 else { throw .malformedMetadata }
            let seconds = try reader.double()
            guard seconds.isFinite else { throw .malformedMetadata }
            purgedAt = Date(timeIntervalSince1970: seconds)
        }
        guard reader.isAtEnd else { throw .malformedMetadata }
        return Metadata(
            key: key, status: status, requestTime: requestTime, responseTime: responseTime,
            expiry: hasExpiry ? Date(timeIntervalSince1970: expiry) : nil, variant: variant, fields: fields,
            purgedAt: purgedAt)
    }

    /// Reads only the expiry from a file's metadata (for `removeExpired` on entries not yet read).
    static func expiry(_ head: UnsafeRawBufferPointer) throws(Defect) -> Date? {
        let prefix = try prefix(head)
        guard head.count >= prefixLength + prefix.metadataLength else { throw .tooShort }
        var reader = ByteReader(UnsafeRawBufferPointer(rebasing: head[prefixLength...]), at: 0)
        _ = try reader.string32()
        _ = try reader.u16()
        _ = try reader.double()
        _ = try reader.double()
        let hasExpiry = try reader.u8() == 1
        let expiry = try reader.double()
        return hasExpiry ? Date(timeIntervalSince1970: expiry) : nil
    }

    static func crc(_ bytes: [UInt8]) -> UInt32 { bytes.withUnsafeBytes { crc($0) } }

    /// CRC-32C: the CPU's CRC instruction where there is one.
    static func crc(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        courier_crc32c(0, bytes.baseAddress, bytes.count)
    }
}

struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) { integer(value) }
    mutating func u32(_ value: UInt32) { integer(value) }
    mutating func u64(_ value: UInt64) { integer(value) }
    mutating func double(_ value: Double) { integer(value.bitPattern) }
    mutating func bytes(_ more: [UInt8]) { bytes.append(contentsOf: more) }
    mutating func string16(_ text: String) {
        let utf8 = Array(text.utf8.prefix(Int(UInt16.max)))
        u16(UInt16(utf8.count))
        bytes.append(contentsOf: utf8)
    }
    mutating func string32(_ text: String) {
        u32(UInt32(clamping: text.utf8.count))
        bytes.append(contentsOf: text.utf8)
    }
    private mutating func integer<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
}

struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    var offset: Int

    init(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        self.bytes = bytes
        self.offset = offset
    }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func u8() throws(DiskEntryFile.Defect) -> UInt8 { try integer() }
    mutating func u16() throws(DiskEntryFile.Defect) -> UInt16 { try integer() }
    mutating func u32() throws(DiskEntryFile.Defect) -> UInt32 { try integer() }
    mutating func u64() throws(DiskEntryFile.Defect) -> UInt64 { try integer() }
    mutating func double() throws(DiskEntryFile.Defect) -> Double { Double(bitPattern: try integer()) }

    mutating func bytes(_ count: Int) throws(DiskEntryFile.Defect) -> UnsafeRawBufferPointer {
        guard count >= 0, bytes.count - offset >= count else { throw .malformedMetadata }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
    }

    mutating func string16() throws(DiskEntryFile.Defect) -> String {
        String(decoding: try bytes(Int(try u16())), as: UTF8.self)
    }

    mutating func string32() throws(DiskEntryFile.Defect) -> String {
        String(decoding: try bytes(Int(try u32())), as: UTF8.self)
    }

    private mutating func integer<T: FixedWidthInteger>() throws(DiskEntryFile.Defect) -> T {
        let size = MemoryLayout<T>.size
        guard bytes.count - offset >= size else { throw .malformedMetadata }
        var value: T = 0
        withUnsafeMutableBytes(of: &value) {
            $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + size)]))
        }
        offset += size
        return T(littleEndian: value)
    }
}
