import CourierTestServer
import CourierTransport
import Foundation
import Testing

@Suite struct RedirectTests {
    @Test func aChainOfRedirectsIsFollowedAndCounted() async throws {
        try await withLoopback { server, transport in
            let response = try await transport.send(server.request("/redirect/3"))
            #expect(response.head.status == .ok)
            #expect(Array(response.body) == Payloads.smallJSON)
            #expect(response.metrics.redirectCount == 3)
        }
    }

    @Test func aLoopEndsWithTooManyRedirects() async throws {
        try await withLoopback { server, transport in
            let error = await serviceError { _ = try await transport.send(server.request("/redirect-loop")) }
            #expect(error?.code == .tooManyRedirects)
            #expect(server.requests(to: "/redirect-loop").count == RedirectPolicy.default.maximumRedirects + 1)
        }
    }

    @Test func withRedirectsOffTheThreeHundredIsReturned() async throws {
        try await withLoopback { server, transport in
            var options = TransferOptions()
            options.redirects = .none
            let response = try await transport.send(server.request("/redirect/1"), body: nil, options: options)
            #expect(response.head.status.code == 302)
            #expect(response.head.headerFields[.location] == "/redirect/0")
        }
    }

    @Test func credentialsNeverReachAnotherPort() async throws {
        try await withLoopback { server, transport in
            let other = try await TestServer.start()
            var headers = HTTPFields()
            headers[.authorization] = "Bearer secret-token"
            headers[.cookie] = "session=secret"
            headers[.proxyAuthorization] = "Basic c2VjcmV0"
            headers[HTTPField.Name("X-Kept")!] = "yes"
            let target = "http://127.0.0.1:\(other.port)/echo"
            let response = try await transport.send(
                server.request("/redirect-to?to=\(target)", headers: headers))
            let echo = try Echo(response.body)
            #expect(echo.header("authorization") == nil)
            #expect(echo.header("cookie") == nil)
            #expect(echo.header("proxy-authorization") == nil)
            #expect(echo.header("x-kept") == "yes")
            await other.stop()
        }
    }

    @Test func aPolicysOwnSensitiveHeadersAreTheOnesDroppedAcrossOrigins() async throws {
        try await withLoopback { server, transport in
            let other = try await TestServer.start()
            let apiKey = HTTPField.Name("X-Api-Key")!
            var headers = HTTPFields()
            headers[apiKey] = "key-secret"
            headers[.authorization] = "Bearer kept-by-this-policy"
            var options = TransferOptions()
            options.redirects = RedirectPolicy(maximumRedirects: 3, sensitiveHeaders: [apiKey])
            let target = "http://127.0.0.1:\(other.port)/echo"
            let response = try await transport.send(
                server.request("/redirect-to?to=\(target)", headers: headers), body: nil, options: options)
            let echo = try Echo(response.body)
            #expect(echo.header("x-api-key") == nil)
            #expect(echo.header("authorization") == "Bearer kept-by-this-policy")
            await other.stop()
        }
    }

    @Test func credentialsStayOnTheSameOrigin() async throws {
        try await withLoopback { server, transport in
            var headers = HTTPFields()
            headers[.authorization] = "Bearer same-origin"
            let response = try await transport.send(server.request("/redirect-to?to=/echo", headers: headers))
            #expect(try Echo(response.body).header("authorization") == "Bearer same-origin")
        }
    }

    @Test(arguments: [
        (303, "GET", false), (302, "GET", false), (301, "GET", false), (307, "POST", true), (308, "POST", true),
    ])
    func methodAndBodyFollowTheStatus(status: Int, method: String, keepsBody: Bool) async throws {
        try await withLoopback { server, transport in
            let response = try await transport.send(
                server.request("/redirect-to?to=/echo&status=\(status)", method: .post), body: .string("payload"))
            let echo = try Echo(response.body)
            #expect(echo.method == method)
            #expect(echo.bodyLength == (keepsBody ? 7 : 0))
        }
    }

    @Test func onlyHTTPAndHTTPSTargetsAreFollowed() async throws {
        try await withLoopback { server, transport in
            let error = await serviceError {
                _ = try await transport.send(server.request("/redirect-to?to=ftp://127.0.0.1/file"))
            }
            #expect(error?.code == .redirectRefused)
        }
    }
}
