internal import CourierCore
public import FoundationEssentials

extension RequestBody {
    /// A JSON body from an `Encodable` value (`Content-Type: application/json`).
    /// An unencodable value (e.g. a non-finite `Double`) is `encodingFailed`.
    public static func json(
        _ value: some Encodable, encoder: JSONEncoder = JSONEncoder()
    ) throws(ServiceError) -> RequestBody {
        do {
            return .bytes(try encoder.encode(value), contentType: "application/json")
        } catch {
            throw ServiceError(.encodingFailed, "The JSON body could not be encoded: \(error)", underlying: error)
        }
    }

    /// A JSON body from a dictionary of JSON values, keys sorted so equal bodies are equal bytes.
    public static func json(_ object: [String: JSONValue]) throws(ServiceError) -> RequestBody {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try .json(JSONValue.object(object), encoder: encoder)
    }

    /// An `application/x-www-form-urlencoded` body: names and values percent-encoded as HTML
    /// forms do (a space becomes `+`, a literal `+` becomes `%2B`), in the order given.
    public static func form(_ fields: KeyValuePairs<String, String>) -> RequestBody {
        form(fields.map { ($0.key, $0.value) })
    }

    /// An `application/x-www-form-urlencoded` body from ordered pairs (names may repeat).
    public static func form(_ fields: [(String, String)]) -> RequestBody {
        let text = fields.map {
            PercentEncoding.encodeFormComponent($0.0) + "=" + PercentEncoding.encodeFormComponent($0.1)
        }.joined(separator: "&")
        return .string(text, contentType: "application/x-www-form-urlencoded")
    }

    /// A `multipart/form-data` body; files are streamed from disk as the body is sent.
    public static func multipart(_ form: MultipartForm) -> RequestBody {
        .segments(form.segments(), contentType: "multipart/form-data; boundary=\(form.boundary)")
    }

}
