import CourierCore
import Testing

/// `MediaType.essence(of:)`, which the event stream's content type check, curl commands'
/// body masking and the OpenAPI transport's streaming choice share.
@Suite struct MediaTypeTests {
    @Test(arguments: [
        ("text/event-stream", "text/event-stream"),
        ("Text/Event-Stream; charset=utf-8", "text/event-stream"),
        (" application/json ;q=0.9", "application/json"),
        ("\tapplication/x-www-form-urlencoded\t", "application/x-www-form-urlencoded"),
        (";charset=utf-8", ""),
        ("", ""),
    ])
    func theEssenceIsTheLowercasedTypeWithoutParameters(value: String, essence: String) {
        #expect(MediaType.essence(of: value) == essence)
        #expect(MediaType.essence(of: value[...]) == essence)
    }
}
