import CourierServices
import CourierTestServer
import Foundation
import Testing

struct Product: Codable, Sendable, Equatable {
    var id: Int
    var name: String
}

struct LossyProducts: Resource {
    typealias Response = LossyArray<Product>
    var base: String
    var endpoint: Endpoint { Endpoint(base, path: "/lossy") }
}

struct MaybeProduct: Resource {
    typealias Response = Product?
    var base: String
    var lenient = true
    var endpoint: Endpoint { Endpoint(base, path: "/lossy") }  // an array, not a product
    var returnsNilWhenDecodingFails: Bool { lenient }
}

@Suite("Lossy collections and optional values")
struct LossyArrayTests {
    @Test("a lossy array keeps the good elements, nil in place of the bad, and says which failed")
    func lossyArray() async throws {
        try await withCoordinator { server, coordinator in
            let products = try await LossyProducts(base: server.baseURL).load(using: coordinator)
            #expect(products.optionals == [Product(id: 1, name: "first"), nil, nil, Product(id: 4, name: "fourth")])
            #expect(products.elements.map(\.id) == [1, 4])
            #expect(products.failures.map(\.index) == [1, 2])
            #expect(products.failures[0].reason.contains("expected Int at id"))
            #expect(products.failures[1].reason.contains("missing key 'name'"))
        }
    }

    @Test("inside a model, and a value that is not an array still fails")
    func nested() throws {
        struct Page: Decodable {
            var items: LossyArray<Product>
            var total: Int
        }
        let page = try JSONDecoder().decode(
            Page.self, from: Data(#"{"items": [{"id": 1, "name": "a"}, 7, {"id": 2, "name": "b"}], "total": 3}"#.utf8))
        #expect(page.items.elements.map(\.name) == ["a", "b"])
        #expect(page.items.failures.map(\.index) == [1])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(Page.self, from: Data(#"{"items": {}, "total": 0}"#.utf8))
        }
        let empty = try JSONDecoder().decode(LossyArray<Product>.self, from: Data("[]".utf8))
        #expect(empty.optionals.isEmpty && empty.failures.isEmpty)
    }

    @Test("an optional single value is nil when it does not decode, if the resource asks")
    func optionalValue() async throws {
        try await withCoordinator { server, coordinator in
            let value = try await MaybeProduct(base: server.baseURL).load(using: coordinator)
            #expect(value == nil)
            let strict = MaybeProduct(base: server.baseURL, lenient: false)
            let error = await #expect(throws: ServiceError.self) { try await strict.load(using: coordinator) }
            #expect(error?.code == .decodingFailed)
        }
    }
}
