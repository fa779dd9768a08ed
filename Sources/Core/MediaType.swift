/// Media types as header fields carry them (RFC 9110, 8.3.1).
package enum MediaType {
    /// The essence of a media type: `type/subtype`, lowercased, without parameters or the
    /// whitespace around it. `"Text/Event-Stream; charset=utf-8"` is `"text/event-stream"`;
    /// an empty value is `""`.
    package static func essence<Value: StringProtocol>(of value: Value) -> String {
        String(value.prefix { $0 != ";" }.filter { $0 != " " && $0 != "\t" }).lowercased()
    }
}
