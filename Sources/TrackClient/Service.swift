import TrackdProtocol

/// Questions for the daemon itself rather than about an asset. (No AVFoundation counterpart: AVFoundation runs
/// in-process; trackd is a service.)
public enum Trackd {
    /// Status of the daemon, as seen by a fresh worker (`trackctl status`): supervisor pid and uptime,
    /// connections, worker crashes, the worker's pid and GStreamer version. Opens a connection for the question
    /// and closes it; blocks for the handshake and one round trip. Throws -11903 when trackd cannot be reached
    /// (the message says how to start it).
    public static func status(socketPath: String? = nil) throws(TrackError) -> StatusReport {
        let connection = try Connection(socketPath: socketPath ?? SocketPath.resolveDefault(), clientName: "TrackClient")
        defer { connection.close() }
        let reply = try connection.request(.getStatus).message
        guard case .status(let status) = reply else {
            throw TrackError(.protocolViolation, "trackd answered GetStatus with \(reply.type)")
        }
        return status
    }
}
