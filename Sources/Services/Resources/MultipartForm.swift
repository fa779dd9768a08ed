public import FoundationEssentials

/// The parts of a `multipart/form-data` body (RFC 7578): text fields and files.
///
/// File parts are streamed from disk when the request is sent, never read whole into memory:
/// `.multipart(MultipartForm().field("title", "Report").file("upload", path: "/tmp/r.pdf"))`.
public struct MultipartForm: Sendable {
    enum Part: Sendable {
        case field(name: String, value: String)
        case data(name: String, filename: String, contentType: String, data: Data)
        case file(name: String, filename: String, contentType: String, path: String)
    }

    /// The boundary between parts (random unless given).
    let boundary: String
    private(set) var parts: [Part] = []

    /// Creates an empty form with a random boundary, or the one given.
    public init(boundary: String? = nil) {
        self.boundary = boundary ?? "courier-" + UUID().uuidString.lowercased()
    }

    /// Adds a text field.
    public func field(_ name: String, _ value: String) -> MultipartForm {
        var copy = self
        copy.parts.append(.field(name: name, value: value))
        return copy
    }

    /// Adds a file part from bytes in memory.
    public func file(
        _ name: String, filename: String, contentType: String = "application/octet-stream", data: Data
    ) -> MultipartForm {
        var copy = self
        copy.parts.append(.data(name: name, filename: filename, contentType: contentType, data: data))
        return copy
    }

    /// Adds a file part streamed from `path`; the file name defaults to the path's last component.
    public func file(
        _ name: String, path: String, filename: String? = nil, contentType: String = "application/octet-stream"
    ) -> MultipartForm {
        var copy = self
        let defaultName = path.split(separator: "/").last.map(String.init) ?? "file"
        copy.parts.append(.file(name: name, filename: filename ?? defaultName, contentType: contentType, path: path))
        return copy
    }

    /// The body as segments: part headers in memory, files by path.
    func segments() -> [RequestBody.Segment] {
        var segments: [RequestBody.Segment] = []
        var pending = ""
        for part in parts {
            pending += "--\(boundary)\r\n"
            switch part {
            case .field(let name, let value):
                pending += "Content-Disposition: form-data; name=\"\(Self.quote(name))\"\r\n\r\n\(value)\r\n"
            case .data(let name, let filename, let contentType, let data):
                pending += Self.fileHeader(name: name, filename: filename, contentType: contentType)
                segments.append(.bytes(Data(pending.utf8)))
                segments.append(.bytes(data))
                pending = "\r\n"
            case .file(let name, let filename, let contentType, let path):
                pending += Self.fileHeader(name: name, filename: filename, contentType: contentType)
                segments.append(.bytes(Data(pending.utf8)))
                segments.append(.file(path: path))
                pending = "\r\n"
            }
        }
        pending += "--\(boundary)--\r\n"
        segments.append(.bytes(Data(pending.utf8)))
        return segments
    }

    private static func fileHeader(name: String, filename: String, contentType: String) -> String {
        "Content-Disposition: form-data; name=\"\(quote(name))\"; filename=\"\(quote(filename))\"\r\n"
            + "Content-Type: \(contentType.filter { $0 != "\r" && $0 != "\n" })\r\n\r\n"
    }

    /// Escapes a name for a quoted header parameter as browsers do (RFC 7578 section 4.2).
    private static func quote(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "\"": out += "%22"
            case "\r": out += "%0D"
            case "\n": out += "%0A"
            default: out.append(character)
            }
        }
        return out
    }
}
