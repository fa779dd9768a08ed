/// The one key-path mechanism for responses decoded with a `Decoder` Courier does not own
/// (Foundation's `JSONDecoder`, XMLCoder's `XMLDecoder`): ``Resource/decodingKeyPath`` names
/// the keys (JSON object keys, XML element names) from the root to the part to decode.
///
/// The path travels in a task-local, not in the decoder's `userInfo`, so a decoder the resource
/// shares is never mutated and never copied. ``CourierJSONDecoder`` skips to the path natively.
package enum DecodingKeyPath {
    @TaskLocal static var current: [String] = []

    /// `T` decoded by `decode` from the value at `path` (the whole document when it is empty).
    /// `decode` is called with the payload type to give the decoder.
    package static func decode<T: Decodable>(
        _ type: T.Type, at path: [String], with decode: (Payload<T>.Type) throws -> Payload<T>
    ) throws -> T {
        try $current.withValue(path) { try decode(Payload<T>.self).value }
    }

    /// `T` below the current key path, the envelope skipped.
    package struct Payload<T: Decodable>: Decodable {
        package let value: T

        struct Key: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        package init(from decoder: any Decoder) throws {
            let path = DecodingKeyPath.current
            guard let last = path.last else {
                value = try T(from: decoder)
                return
            }
            var container = try decoder.container(keyedBy: Key.self)
            for key in path.dropLast() {
                container = try container.nestedContainer(keyedBy: Key.self, forKey: Key(stringValue: key))
            }
            value = try container.decode(T.self, forKey: Key(stringValue: last))
        }
    }
}
