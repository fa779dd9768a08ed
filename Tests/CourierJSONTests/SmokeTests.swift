import CourierJSON
import Foundation
import Testing

@Suite struct SmokeTests {
    struct Address: Codable, Equatable { var streetName: String; var zip: Int? }
    struct User: Codable, Equatable {
        var id: Int
        var name: String
        var score: Double
        var active: Bool
        var tags: [String]
        var address: Address
        var note: String?
    }

    @Test func decodesAModel() throws {
        let json = #"{"id": 7, "name": "Ann \"A\" \u00e9\ud83d\ude00", "score": 1.5e2, "active": true, "tags": ["a", "b"], "address": {"streetName": "Main", "zip": null}}"#
        let pair = DecoderPair()
        let (ours, foundation) = pair.outcomes(User.self, json)
        #expect(ours.matches(foundation))
        let user = try CourierJSONDecoder().decode(User.self, from: Data(json.utf8))
        #expect(user.name == "Ann \"A\" é😀")
    }
}
