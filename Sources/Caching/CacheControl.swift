package import HTTPTypes

/// The directives of every `Cache-Control` field of a message (RFC 9111, section 5.2).
///
/// Names are case-insensitive; a quoted value is unquoted. When a directive appears twice the
/// first occurrence counts, on one line or over several. A `delta-seconds` value that is not a
/// non-negative integer (`1.5`, `3600.0`, `-1`, `60s`, `a60`, `'60'`), or that has whitespace
/// around its `=`
/// (`max-age = 60`, which the grammar does not allow), is reported as invalid, and the rules
/// treat the response as stale (section 4.2.1 encourages it). Leading zeros are fine
/// (`003600` is 3600); values past 2^31 are 2^31 (section 1.2.2). The table of these choices is
/// in the Caching article; `CacheFieldRulesTests` pins each one.
package struct CacheControl: Sendable, Hashable {
    /// Directive names (lower-cased) and their values (nil when the directive has none).
    package private(set) var directives: [String: String?] = [:]
    /// Directives with whitespace around their `=`.
    private var malformed: Set<String> = []

    /// Parses the `Cache-Control` fields of `fields`.
    package init(_ fields: HTTPFields) {
        for value in fields[values: .cacheControl] { parse(value) }
    }

    /// Parses one field value.
    package init(_ value: String) { parse(value) }

    /// Whether `name` is present.
    package func contains(_ name: String) -> Bool { directives[name] != nil }

    /// A `delta-seconds` directive: `nil` when absent, `.invalid` when its value is not a
    /// non-negative integer. Values past 2^31 are capped there (section 1.2.2).
    package func seconds(_ name: String) -> DeltaSeconds? {
        guard let entry = directives[name] else { return nil }
        guard !malformed.contains(name), let text = entry, !text.isEmpty,
            text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return .invalid }
        return .seconds(Int(text).map { min($0, 2_147_483_648) } ?? 2_147_483_648)
    }

    /// A `delta-seconds` value.
    package enum DeltaSeconds: Sendable, Hashable {
        case seconds(Int)
        case invalid

        /// The value, or nil when invalid.
        package var value: Int? {
            if case .seconds(let seconds) = self { return seconds }
            return nil
        }
    }

    /// `no-store`: never store.
    package var noStore: Bool { contains("no-store") }
    /// `must-understand`: store only when the cache implements the status code's caching rules;
    /// such a cache then ignores `no-store` (RFC 9111, section 5.2.2.3).
    package var mustUnderstand: Bool { contains("must-understand") }
    /// `no-cache` (qualified or not).
    package var noCache: Bool { contains("no-cache") }
    /// `no-cache` without field names: revalidate before every use. A qualified
    /// `no-cache="Set-Cookie"` only forbids sending the fields it names without revalidation
    /// (section 5.2.2.4): see ``noCacheFields``.
    package var requiresRevalidation: Bool { noCache && noCacheFields.isEmpty }
    /// The field names (lower-cased) of a qualified `no-cache`; empty when unqualified.
    package var noCacheFields: [String] {
        guard case .some(.some(let names)) = directives["no-cache"] else { return [] }
        return names.split(separator: ",").map { String($0).trimmedSpaces.lowercased() }.filter { !$0.isEmpty }
    }
    /// `must-revalidate`: never serve stale (`proxy-revalidate` is for shared caches only).
    package var mustRevalidate: Bool { contains("must-revalidate") }
    /// Whether a cache never serves the response stale: `must-revalidate`, and in a shared cache
    /// also `proxy-revalidate` and `s-maxage`, which implies it (RFC 9111, section 5.2.2.10).
    package func mustRevalidate(shared: Bool) -> Bool {
        mustRevalidate || (shared && (contains("proxy-revalidate") || contains("s-maxage")))
    }
    /// `max-age`.
    package var maxAge: DeltaSeconds? { seconds("max-age") }
    /// `stale-while-revalidate` seconds (RFC 5861), when valid.
    package var staleWhileRevalidate: Int? { seconds("stale-while-revalidate")?.value }
    /// `stale-if-error` seconds (RFC 5861), when valid.
    package var staleIfError: Int? { seconds("stale-if-error")?.value }

    private mutating func parse(_ value: String) {
        var rest = Substring(value)
        while !rest.isEmpty {
            rest = rest.drop(while: { $0 == " " || $0 == "\t" || $0 == "," })
            guard !rest.isEmpty else { break }
            let nameEnd = rest.firstIndex(where: { $0 == "=" || $0 == "," }) ?? rest.endIndex
            let name = String(rest[..<nameEnd]).trimmedSpaces.lowercased()
            let spaceBefore = rest[..<nameEnd].last == " " || rest[..<nameEnd].last == "\t"
            rest = rest[nameEnd...]
            var argument: String?
            var spaced = false
            if rest.first == "=" {
                let afterEquals = rest.dropFirst()
                spaced = spaceBefore || afterEquals.first == " " || afterEquals.first == "\t"
                rest = afterEquals.drop(while: { $0 == " " || $0 == "\t" })
                if rest.first == "\"" {
                    var text = ""
                    var index = rest.index(after: rest.startIndex)
                    while index < rest.endIndex, rest[index] != "\"" {
                        if rest[index] == "\\" { index = rest.index(after: index) }
                        if index < rest.endIndex { text.append(rest[index]) }
                        if index < rest.endIndex { index = rest.index(after: index) }
                    }
                    argument = text
                    rest = index < rest.endIndex ? rest[rest.index(after: index)...] : rest[rest.endIndex...]
                    rest = rest.drop(while: { $0 != "," })
                } else {
                    let end = rest.firstIndex(of: ",") ?? rest.endIndex
                    argument = String(rest[..<end]).trimmedSpaces
                    rest = rest[end...]
                }
            }
            guard !name.isEmpty else { continue }
            guard directives[name] == nil else { continue }
            directives[name] = .some(argument)
            if spaced { malformed.insert(name) }
        }
    }
}

extension String {
    var trimmedSpaces: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" })!
        return String(scalars[first...last])
    }
}
