internal import CCurl

/// The connection controls of ``CurlTransport/Configuration`` as curl options: the same for
/// every transfer of a transport, so set once per easy handle (and again after
/// `curl_easy_reset`) rather than per transfer.
struct ConnectionSettings: Sendable {
    /// `CURLOPT_RESOLVE`'s list, `nil` without overrides.
    let overrides: CurlStringList?
    let shufflesAddresses: Bool
    /// `CURLOPT_INTERFACE`'s value.
    let localBinding: String?
    /// `CURLOPT_MAXLIFETIME_CONN`, in seconds.
    let maximumConnectionAge: Int?

    init() {
        overrides = nil
        shufflesAddresses = false
        localBinding = nil
        maximumConnectionAge = nil
    }

    init(_ configuration: CurlTransport.Configuration) {
        overrides =
            configuration.addressOverrides.isEmpty
            ? nil : CurlStringList(configuration.addressOverrides.map(\.curlEntry))
        shufflesAddresses = configuration.shufflesAddresses
        localBinding = configuration.localBinding?.curlValue
        maximumConnectionAge = configuration.maximumConnectionAge.map { max(1, $0.wholeSecondsRoundedUp) }
    }

    /// Sets the options on a handle; the first code curl refused with, or `CURLE_OK`.
    ///
    /// Overrides enter the DNS cache of the multi handle the transfer joins, where they never
    /// expire: curl loads them once per handle that has them set, as its transfer starts.
    func apply(to easy: UnsafeMutableRawPointer) -> CURLcode {
        var failed = CURLE_OK
        func check(_ code: CURLcode) { if failed == CURLE_OK { failed = code } }
        if let overrides { check(courier_easy_setopt_slist(easy, CURLOPT_RESOLVE, overrides.head)) }
        if shufflesAddresses { check(courier_easy_setopt_long(easy, CURLOPT_DNS_SHUFFLE_ADDRESSES, 1)) }
        if let localBinding { check(courier_easy_setopt_string(easy, CURLOPT_INTERFACE, localBinding)) }
        if let maximumConnectionAge {
            check(courier_easy_setopt_long(easy, CURLOPT_MAXLIFETIME_CONN, maximumConnectionAge))
        }
        return failed
    }

    /// What a failure of ``apply(to:)`` means to the caller.
    func error(for code: CURLcode) -> ServiceError {
        ServiceError(
            .invalidRequest,
            "This libcurl (\(CurlFeatures.current.version)) refused the transport's connection settings: "
                + String(cString: curl_easy_strerror(code)) + ".")
    }
}

/// A `curl_slist` that curl reads and never changes, freed with the last reference.
///
/// `@unchecked Sendable`: the list is built in `init` and never written again; curl only
/// reads it, from any loop thread, while a handle that has it set lives, and every such
/// handle belongs to a loop that holds this list.
final class CurlStringList: @unchecked Sendable {
    let head: UnsafeMutablePointer<curl_slist>?

    init(_ strings: [String]) {
        var head: UnsafeMutablePointer<curl_slist>?
        for string in strings {
            guard let appended = curl_slist_append(head, string) else {
                preconditionFailure("curl_slist_append failed: out of memory")
            }
            head = appended
        }
        self.head = head
    }

    deinit { if let head { curl_slist_free_all(head) } }
}
