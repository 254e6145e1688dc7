import Protocol

/// Questions for the daemon itself rather than about an asset.
public enum Trackd {
    /// Status of the daemon, as seen by a fresh worker (`trackctl status`).
    public static func status(socketPath: String? = nil) throws(TrackError) -> StatusReport {
        let connection = try Connection(socketPath: socketPath ?? SocketPath.resolveDefault(), clientName: "TrackClient")
        defer { connection.close() }
        let (reply, _) = try connection.request(.getStatus)
        guard case .status(let status) = reply else {
            throw TrackError(.protocolViolation, "trackd answered GetStatus with \(reply.type)")
        }
        return status
    }
}
