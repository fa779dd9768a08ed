package import HTTPTypes

/// The codings a `Content-Encoding` or `Transfer-Encoding` field lists (RFC 9110, 8.4;
/// RFC 9112, 6.1).
package enum Codings {
    /// The codings `name` lists over all its lines, in the order applied, as spelled, without
    /// the spaces and tabs around them; empty elements and the codings in `ignored` (lowercase
    /// names, compared in ASCII without case) left out. `"gzip, Identity,,x-Foo"` ignoring
    /// `identity` is `["gzip", "x-Foo"]`.
    package static func listed(
        in fields: HTTPFields, _ name: HTTPField.Name, ignoring ignored: Set<String> = []
    ) -> [Substring] {
        var codings: [Substring] = []
        for value in fields[values: name] {
            for element in value.split(separator: ",") {
                var coding = element
                while coding.first == " " || coding.first == "\t" { coding.removeFirst() }
                while coding.last == " " || coding.last == "\t" { coding.removeLast() }
                guard !coding.isEmpty, !ignored.contains(asciiLowercased(coding)) else { continue }
                codings.append(coding)
            }
        }
        return codings
    }

    /// `coding` with its ASCII letters lowercased and nothing else changed (a coding outside
    /// ASCII never matches a registered name).
    private static func asciiLowercased(_ coding: Substring) -> String {
        String(decoding: coding.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }
}
