/// AVError-style result codes, with AVFoundation's numeric values so that code ported from AVFoundation can
/// switch on the same numbers. Every error trackd sends carries one of these and a message naming the problem.
public enum AVErrorCode: Int32, Sendable, CaseIterable, CustomStringConvertible {
    case unknown = -11800
    case mediaServicesWereReset = -11819
    case decodeFailed = -11821
    case invalidSourceMedia = -11822
    case fileFormatNotRecognized = -11828
    case fileFailedToParse = -11829
    case decoderNotFound = -11833
    case operationNotSupportedForAsset = -11838
    case operationInterrupted = -11847
    case failedToLoadMediaData = -11849
    case undecodableMediaData = -11855
    case unsupportedOutputSettings = -11861
    case formatUnsupported = -11864
    /// Not an AVFoundation code: the peer broke the wire protocol (bad frame, wrong descriptor count, …).
    case protocolViolation = -11900
    /// Not an AVFoundation code: an argument named something that does not exist (asset id, track id, output id).
    case invalidArgument = -11901
    /// Not an AVFoundation code: a configured limit was reached (message size, pool bytes, connections).
    case limitExceeded = -11902
    /// Not an AVFoundation code, never on the wire: the client could not reach trackd's socket.
    case daemonUnreachable = -11903
    /// Not an AVFoundation code: trackd is stopping (SIGTERM: `systemctl stop` or `restart`). A request made while it
    /// stops, a read that did not finish within its `--stop-timeout` grace, and finally the connection itself (an
    /// Error with request id 0) get this code; the message starts "trackd is stopping".
    case daemonStopping = -11904
    /// Not an AVFoundation code: the client's uid opened new connections faster than trackd allows
    /// (`--connection-rate-per-uid`, `--connection-burst-per-uid`); the connection is refused. Try again later.
    case connectionRateExceeded = -11905

    public var description: String {
        switch self {
        case .unknown: "AVErrorUnknown"
        case .mediaServicesWereReset: "AVErrorMediaServicesWereReset"
        case .decodeFailed: "AVErrorDecodeFailed"
        case .invalidSourceMedia: "AVErrorInvalidSourceMedia"
        case .fileFormatNotRecognized: "AVErrorFileFormatNotRecognized"
        case .fileFailedToParse: "AVErrorFileFailedToParse"
        case .decoderNotFound: "AVErrorDecoderNotFound"
        case .operationNotSupportedForAsset: "AVErrorOperationNotSupportedForAsset"
        case .operationInterrupted: "AVErrorOperationInterrupted"
        case .failedToLoadMediaData: "AVErrorFailedToLoadMediaData"
        case .undecodableMediaData: "AVErrorUndecodableMediaData"
        case .unsupportedOutputSettings: "AVErrorUnsupportedOutputSettings"
        case .formatUnsupported: "AVErrorFormatUnsupported"
        case .protocolViolation: "TrackdErrorProtocolViolation"
        case .invalidArgument: "TrackdErrorInvalidArgument"
        case .limitExceeded: "TrackdErrorLimitExceeded"
        case .daemonUnreachable: "TrackdErrorDaemonUnreachable"
        case .daemonStopping: "TrackdErrorDaemonStopping"
        case .connectionRateExceeded: "TrackdErrorConnectionRateExceeded"
        }
    }
}

/// An error as it travels on the wire and as clients see it: a code and a message that names the problem.
/// The counterpart of an `NSError` in `AVFoundationErrorDomain` (`AVError`): the same numeric codes, plus
/// -119xx for trackd's own. A plain value, `Sendable`.
public struct TrackError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The numeric code: an ``AVErrorCode`` raw value, or one this version does not know (see ``knownCode``).
    public var code: Int32
    /// What went wrong, naming the file, track, setting or limit concerned; for the user, not for parsing.
    public var message: String

    /// An error with a known code.
    public init(_ code: AVErrorCode, _ message: String) {
        self.code = code.rawValue
        self.message = message
    }

    /// An error with any code, as received from the wire.
    public init(rawCode: Int32, message: String) {
        self.code = rawCode
        self.message = message
    }

    /// The code as an ``AVErrorCode``, or nil when this version does not know it.
    public var knownCode: AVErrorCode? { AVErrorCode(rawValue: code) }

    /// "CODE (name): message".
    public var description: String {
        "\(code) \(knownCode.map { "(\($0))" } ?? ""): \(message)"
    }
}

#if canImport(Glibc)
import Glibc
#endif
