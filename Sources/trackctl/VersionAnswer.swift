import TrackdProtocol
import TrackClient

/// `trackctl --version` (anywhere on the line, as --help): trackctl's version (`trackdVersion`, the one trackd is
/// built with), then the version of the trackd at the socket and its GStreamer's, from the worker's
/// handshake — or why that trackd could not be asked. Exit 0 either way: the question was trackctl's version.
enum VersionAnswer {
    static func answer(_ words: [String]) -> String? {
        guard words.contains(Global.version.info.name) else { return nil }
        var socketPath: String?
        var rest = words[...]
        while let word = rest.popFirst() {
            if word == Global.socket.info.name { socketPath = rest.popFirst() }
            if word.hasPrefix(Global.socket.info.name + "=") { socketPath = String(word.dropFirst(Global.socket.info.name.count + 1)) }
        }
        let daemon: String
        do {
            let version = try Trackd.version(socketPath: socketPath)
            daemon = "trackd \(version.trackd)" + (version.gstreamer.isEmpty ? "" : " (\(version.gstreamer))")
        } catch {
            daemon = "trackd: \(error.message)"
        }
        return "trackctl \(trackdVersion)\n\(daemon)"
    }
}
