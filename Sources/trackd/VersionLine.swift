import GstBridge
import TrackdProtocol

/// trackd's version (`trackdVersion`, Sources/Protocol/TrackdVersion.swift) and GStreamer's, as one line:
/// `trackd --version` prints it, and each worker sends it as its HelloReply's serverVersion (docs/PROTOCOL.md).
enum VersionLine {
    static var text: String { "trackd \(trackdVersion) (\(Gst.libraryVersion))" }
}
