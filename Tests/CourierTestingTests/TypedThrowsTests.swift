import CourierTesting
import Foundation
import Testing

/// `Resource.load`, `loadResponse`, `RequestCoordinator.load` and `send` throw `ServiceError`
/// by type: a `catch` reads the code without a cast (this file would not compile otherwise).
@Suite("Typed throws")
struct TypedThrowsTests {
    @Test("each public load reports a ServiceError a catch reads without a cast")
    func errorsAreTyped() async throws {
        let mock = MockTransport()
        mock.respond(to: .get, "/v1/users/9", with: .status(.notFound))
        let coordinator = coordinator(mock)
        var codes: [ServiceError.Code] = []
        do { _ = try await UserResource(id: 9).load(using: coordinator) } catch { codes.append(error.code) }
        do { _ = try await UserResource(id: 9).loadResponse(using: coordinator) } catch { codes.append(error.code) }
        do { _ = try await coordinator.load(UserResource(id: 9)) } catch { codes.append(error.code) }
        do { _ = try await coordinator.load(User.self, from: "https://api.example.com/v1/users/9") } catch {
            codes.append(error.code)
        }
        do { _ = try await coordinator.load(User.self, from: "not a url") } catch { codes.append(error.code) }
        await coordinator.shutdown()
        do {
            _ = try await coordinator.send(
                HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/"))
        } catch {
            codes.append(error.code)
        }
        #expect(
            codes == [
                .unacceptableStatus, .unacceptableStatus, .unacceptableStatus, .unacceptableStatus, .invalidRequest,
                .shutDown,
            ])
    }
}
