import CCurl
import Testing

@testable import CourierTransport

/// Every curl result code, with the ``ServiceError`` code it becomes at each stage.
@Suite struct CurlErrorMappingTests {
    typealias Stage = CurlErrorMapping.Stage

    /// curl's codes 1...100 by number (curl.h, 7.88 to 8.x). Codes of protocols Courier never
    /// enables (FTP, TFTP, LDAP, SSH, ...) are the network's fault, as is any newer code.
    static let expected: [Int: ServiceError.Code] = {
        var table = [Int: ServiceError.Code]()
        for code in 1...100 { table[code] = .networkFailed }
        for code in [3, 4, 36, 43, 45, 48, 49] { table[code] = .invalidRequest }  // the caller's request or options
        for code in [2, 65, 93] { table[code] = .unknown }  // Courier's or the process's own trouble
        for code in [5, 6] { table[code] = .dnsFailed }
        for code in [7, 89, 96, 97] { table[code] = .cannotConnect }
        for code in [8, 16, 33, 61, 92, 95] { table[code] = .malformedResponse }
        for code in [35, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 91, 98] { table[code] = .tlsFailed }
        for code in [52, 55] { table[code] = .connectionClosed }
        for code in [23, 26, 37] { table[code] = .fileAccess }
        table[18] = .truncatedBody
        table[28] = .timedOut
        table[42] = .cancelled
        table[47] = .tooManyRedirects
        table[63] = .responseTooLarge
        table[90] = .pinningFailed
        table[100] = .headersTooLarge
        return table
    }()

    @Test(arguments: [Stage.sending, .awaitingHead, .receivingBody])
    func everyCodeNamesThePartyAtFault(stage: Stage) {
        // 43 after the head is a malformed trailer (codesThatDependOnTheStage).
        let stageBound = stage == .receivingBody ? [1, 27, 43, 56] : [1, 27, 56]
        for (raw, code) in Self.expected.sorted(by: { $0.key < $1.key }) where !stageBound.contains(raw) {
            let mapped = CurlErrorMapping.errorCode(for: CURLcode(rawValue: UInt32(raw)), detail: "", stage: stage)
            #expect(mapped == code, "CURLcode \(raw)")
        }
    }

    @Test func codesThatDependOnTheStage() {
        func map(_ raw: UInt32, _ stage: Stage, _ detail: String = "") -> ServiceError.Code {
            CurlErrorMapping.errorCode(for: CURLcode(rawValue: raw), detail: detail, stage: stage)
        }
        // A bad function argument is the caller's, except after the head: curl's header store
        // refusing a trailer line (a NUL in it).
        #expect(map(43, .sending) == .invalidRequest)
        #expect(map(43, .receivingBody) == .malformedResponse)
        // Unsupported protocol: the caller's scheme before sending, the server's reply after.
        #expect(map(1, .sending) == .invalidRequest)
        #expect(map(1, .awaitingHead) == .malformedResponse)
        #expect(map(1, .receivingBody) == .malformedResponse)
        // Out of memory while reading the head is curl refusing a header line over 100 KiB.
        #expect(map(27, .awaitingHead) == .headersTooLarge)
        #expect(map(27, .receivingBody) == .unknown)
        // A receive error is a reset, unless curl says the chunked framing was broken.
        #expect(map(56, .receivingBody, "Connection reset by peer") == .connectionClosed)
        #expect(
            map(56, .receivingBody, "Illegal or missing hexadecimal sequence in chunked-encoding") == .malformedResponse
        )
        #expect(map(56, .receivingBody, "chunk hex-length char not a hex digit") == .malformedResponse)
        #expect(map(56, .awaitingHead, "Too large response headers: 307205 > 307200") == .headersTooLarge)
    }

    @Test func onlyTheNetworksFaultsAreRetryable() {
        let retryable = Set(Self.expected.values.filter(\.isRetryable).map(\.description))
        #expect(retryable == ["networkFailed", "dnsFailed", "cannotConnect", "timedOut", "connectionClosed"])
    }
}
