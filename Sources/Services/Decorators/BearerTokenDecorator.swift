public import HTTPTypes

/// Supplies bearer tokens to ``BearerTokenDecorator``.
public protocol TokenProvider: Sendable {
    /// The token to use now (called once, then again only after a refresh failed).
    func currentToken() async throws -> String
    /// A new token to replace `rejected`, which the server answered 401 to.
    func refreshToken(replacing rejected: String) async throws -> String
}

/// Adds `Authorization: Bearer <token>` and refreshes the token when the server answers 401.
///
/// When many requests get 401 for the same token at once, the token is refreshed once and each
/// request is replayed once with the new token; if the refresh fails, each of them fails with
/// `decorationFailed` (the provider's error underneath). A request that gets 401 again after
/// its replay fails with `unacceptableStatus`: no loops, no refresh storms.
public struct BearerTokenDecorator: RequestDecorator, ReplayingDecorator {
    private let state: TokenState

    /// Creates a decorator over `tokens`. Share one instance among the requests that share a token.
    public init(tokens: any TokenProvider) {
        state = TokenState(provider: tokens)
    }

    public func decorate(_ request: inout HTTPRequest) async throws {
        let token = try await state.token()
        request.headerFields[.authorization] = "Bearer \(token)"
    }

    func inspect(_ outcome: DecoratedOutcome, of request: HTTPRequest) async throws -> ReplayDecision {
        guard outcome.status?.code == 401,
            let header = request.headerFields[.authorization], header.hasPrefix("Bearer ")
        else { return .proceed }
        try await state.refresh(rejected: String(header.dropFirst("Bearer ".count)))
        return .replay
    }
}

/// The current token and the one refresh in progress, if any.
private actor TokenState {
    let provider: any TokenProvider
    var current: String?
    var fetching: Task<String, any Error>?
    /// The refresh in progress and the token it replaces.
    var refreshing: (rejected: String, task: Task<String, any Error>)?
    /// The last refresh that failed: later 401s for the same token fail with its error
    /// instead of refreshing again.
    var failed: (rejected: String, error: any Error)?

    init(provider: any TokenProvider) { self.provider = provider }

    func token() async throws -> String {
        if let current { return current }
        if let refreshing { return try await refreshing.task.value }
        let task = fetching ?? Task { [provider] in try await provider.currentToken() }
        fetching = task
        defer { if fetching == task { fetching = nil } }
        let token = try await task.value
        failed = nil
        if current == nil { current = token }
        return current ?? token
    }

    /// Makes sure the token is no longer `rejected`: joins the refresh for it, or starts one.
    /// A failed refresh clears the token, so the next request asks the provider afresh.
    func refresh(rejected: String) async throws {
        if let current, current != rejected { return }  // already refreshed by another request
        if let failed, failed.rejected == rejected { throw failed.error }
        let task: Task<String, any Error>
        if let refreshing, refreshing.rejected == rejected {
            task = refreshing.task
        } else {
            task = Task { [provider] in try await provider.refreshToken(replacing: rejected) }
            refreshing = (rejected, task)
        }
        do {
            let token = try await task.value
            if refreshing?.task == task {
                current = token
                refreshing = nil
            }
        } catch {
            if refreshing?.task == task {
                current = nil
                refreshing = nil
                failed = (rejected, error)
            }
            throw error
        }
    }
}
