import TrackdProtocol

/// Questions for the daemon itself rather than about an asset. (No AVFoundation counterpart: AVFoundation runs
/// in-process; trackd is a service.)
public enum Trackd {
    /// Status of the daemon, as seen by a fresh worker (`trackctl status`): supervisor pid and uptime,
    /// connections, worker crashes, the worker's pid and GStreamer version. Opens a connection for the question
    /// and closes it; blocks for the handshake and one round trip. Throws -11903 when trackd cannot be reached
    /// (the message says how to start it).
    public static func status(socketPath: String? = nil) throws(TrackError) -> StatusReport {
        try statusAndVersion(socketPath: socketPath).status
    }

    /// The daemon's status (as `status`) and its version (as `version`), from one connection.
    public static func statusAndVersion(socketPath: String? = nil) throws(TrackError) -> (status: StatusReport, version: ServerVersion) {
        let connection = try Connection(socketPath: socketPath ?? SocketPath.resolveDefault(), clientName: "TrackClient")
        defer { connection.close() }
        let reply = try connection.request(.getStatus).message
        guard case .status(let status) = reply else {
            throw TrackError(.protocolViolation, "trackd answered GetStatus with \(reply.type)")
        }
        return (status, ServerVersion(connection.hello.serverVersion))
    }

    /// The daemon's version and its GStreamer's, as its worker announces them in the handshake. Blocks for the
    /// handshake; throws -11903 when trackd cannot be reached.
    public static func version(socketPath: String? = nil) throws(TrackError) -> ServerVersion {
        let connection = try Connection(socketPath: socketPath ?? SocketPath.resolveDefault(), clientName: "TrackClient")
        defer { connection.close() }
        return ServerVersion(connection.hello.serverVersion)
    }
}

/// What a worker says it is in its HelloReply (`serverVersion`, docs/PROTOCOL.md):
/// `trackd VERSION (GStreamer X.Y.Z)`, e.g. `trackd 0.1.0 (GStreamer 1.22.0)`.
public struct ServerVersion: Sendable, Equatable {
    /// The announcement as sent.
    public let text: String
    /// trackd's version (`0.1.0`); the whole text when it is not in the form above.
    public let trackd: String
    /// GStreamer's (`GStreamer 1.22.0`); "" when the text is not in the form above.
    public let gstreamer: String

    public init(_ text: String) {
        self.text = text
        let prefix = "trackd "
        guard text.hasPrefix(prefix), text.hasSuffix(")"), let open = text.firstRange(of: " (") else {
            (trackd, gstreamer) = (text, "")
            return
        }
        trackd = String(text[text.index(text.startIndex, offsetBy: prefix.count)..<open.lowerBound])
        gstreamer = String(text[open.upperBound..<text.index(before: text.endIndex)])
    }
}
