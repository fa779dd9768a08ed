import Foundation

/// The payloads the benchmark serves: realistic records with strings, integers, doubles,
/// booleans, nested objects, ISO-8601 dates and snake_case keys.
enum Payloads {
    /// A record as the server writes it, decoded with `.convertFromSnakeCase` and `.iso8601`.
    struct Record: Codable, Sendable, Equatable {
        struct Address: Codable, Sendable, Equatable {
            var streetName: String
            var city: String
            var zipCode: String
            var latitude: Double
            var longitude: Double
        }
        var id: Int
        var userName: String
        var emailAddress: String
        var score: Double
        var isActive: Bool
        var createdAt: Date
        var tags: [String]
        var address: Address
        var balanceCents: Int
    }

    /// The same record with plain keys and the date as text: no key or date strategy. Its
    /// properties are named as the JSON keys are, snake case included.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    struct PlainRecord: Codable, Sendable, Equatable {
        struct Address: Codable, Sendable, Equatable {
            var street_name: String
            var city: String
            var zip_code: String
            var latitude: Double
            var longitude: Double
        }
        var id: Int
        var user_name: String
        var email_address: String
        var score: Double
        var is_active: Bool
        var created_at: String
        var tags: [String]
        var address: Address
        var balance_cents: Int
    }

    static func record(_ index: Int) -> String {
        let cities = ["Lisbon", "Zürich", "Osaka", "Montréal", "Nairobi", "Austin"]
        let day = 1 + index % 28
        let tags = ["alpha", "beta", "gamma", "delta"].prefix(1 + index % 4).map { "\"\($0)\"" }.joined(separator: ",")
        return """
            {"id":\(index),"user_name":"user-\(index)","email_address":"user\(index)@example.com",\
            "score":\(Double(index % 1000) / 8),"is_active":\(index % 3 != 0),\
            "created_at":"2026-11-\(day < 10 ? "0" : "")\(day)T12:\(index % 60 < 10 ? "0" : "")\(index % 60):00Z",\
            "tags":[\(tags)],"address":{"street_name":"\(index) Main Street","city":"\(cities[index % cities.count])",\
            "zip_code":"\(10000 + index)","latitude":\(38.7 + Double(index % 100) / 1000),"longitude":\(-9.1 - Double(index % 50) / 1000)},\
            "balance_cents":\(index * 1_337)}
            """
    }

    /// About 1 KB: an object with a few fields and three records.
    static let small: Data = {
        let records = (0..<3).map(record).joined(separator: ",")
        return Data(#"{"page":1,"total":3,"next":null,"items":[\#(records)]}"#.utf8)
    }()

    /// About 100 KB: an array of records.
    static let medium: Data = {
        var records: [String] = []
        var size = 2
        var index = 0
        while size < 100_000 {
            let text = record(index)
            records.append(text)
            size += text.utf8.count + 1
            index += 1
        }
        return Data(("[" + records.joined(separator: ",") + "]").utf8)
    }()
}
