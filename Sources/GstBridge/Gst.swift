// GstBridge — the only Swift module that touches GStreamer. Everything GStreamer hands out is wrapped here into the
// wire types of Protocol (TrackError, MediaTime, FourCC, TrackDescription …); nothing above sees a Gst pointer.
//
// Threading: no GMainLoop and no async/await. Blocking calls (bus pops, appsink pulls) run on the caller's thread.
// Callbacks that GStreamer runs on its streaming threads (pad-added, pad probes) only touch small context objects
// that are protected by a Mutex.
import CGStreamer
import MediaIndex
import CGstShim
import TrackdProtocol

public enum Gst {
    private static let initResult: Result<String, TrackError> = {
        var error: UnsafeMutablePointer<GError>?
        guard unsafe gst_init_check(nil, nil, &error) != 0 else {
            let text = unsafe error.map { unsafe String(cString: $0.pointee.message) } ?? "unknown reason"
            if let error = unsafe error { unsafe g_error_free(error) }
            return .failure(TrackError(.unknown, "GStreamer failed to initialize: \(text)"))
        }
        guard swift_gst_register_fdsrc() != 0 else {
            return .failure(TrackError(.unknown, "could not register the trackdfdsrc element"))
        }
        guard swift_gst_register_swscale() != 0 else {
            return .failure(TrackError(.unknown, "could not register the trackdswscale element"))
        }
        return .success(unsafe takeString(gst_version_string()) ?? "GStreamer")
    }()

    /// gst_init once (idempotent, thread-safe: a static let runs its initializer exactly once), registers trackdfdsrc
    /// and trackdswscale.
    public static func initialize() throws(TrackError) {
        _ = try initResult.get()
    }

    /// Loads every plugin decoding may need (demuxers, parsers, decoders, converters, typefinders, the elements
    /// trackd makes by name) now, while files can still be opened: the worker's seccomp filter refuses openat()
    /// afterwards. Returns how many features were loaded.
    @discardableResult
    public static func preloadPlugins() -> Int {
        Int(swift_gst_preload_plugins())
    }

    /// Loads the plugin of element `factory` (swift_gst_load_element_plugin); false when it is not installed.
    static func loadElementPlugin(_ factory: String) -> Bool { unsafe swift_gst_load_element_plugin(factory) != 0 }

    /// Makes the rehearsal clip (swift_gst_rehearsal_clip): its descriptor (the caller's), or the failure's text.
    static func rehearsalClip() -> Result<Int32, TrackError> {
        var message = [CChar](repeating: 0, count: 256)
        let fd = unsafe swift_gst_rehearsal_clip(&message, message.count)
        guard fd >= 0 else {
            return .failure(TrackError(.unknown, String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
        }
        return .success(fd)
    }

    /// Converts one small frame of each pair (swift_gst_warm_video_conversions, ConversionWarmup.c), compiling
    /// their ORC programs: how many conversions ran.
    static func warmVideoConversions(inputs: [String], outputs: [String], colorimetries: [String], width: Int32,
                                     height: Int32) -> Int {
        Int(unsafe swift_gst_warm_video_conversions(inputs.joined(separator: ","), outputs.joined(separator: ","),
                                                    colorimetries.joined(separator: ","), width, height))
    }

    /// The GStreamer library's version, "GStreamer 1.22.0" (gst_version_string, which needs no gst_init).
    public static var libraryVersion: String { unsafe takeString(gst_version_string()) ?? "GStreamer" }

    /// "GStreamer 1.22.0" (gst_version_string), or the initialization failure.
    public static var versionString: String {
        switch initResult {
        case .success(let v): v
        case .failure(let e): "GStreamer (not initialized: \(e.message))"
        }
    }
}

let clockTimeNone: GstClockTime = swift_gst_clock_time_none()

/// A GstClockTime (nanoseconds) as a MediaTime; GST_CLOCK_TIME_NONE becomes .invalid.
func mediaTime(_ t: GstClockTime) -> MediaTime {
    t == clockTimeNone || t > GstClockTime(Int64.max) ? .invalid : .nanoseconds(Int64(t))
}

// ── Errors ─────────────────────────────────────────────────────────────────────────────────────────────────────────

enum GstErrors {
    /// Maps a GStreamer GError (domain/code) to an AVError code.
    static func code(domain: GQuark, code: Int32) -> AVErrorCode {
        if domain == gst_core_error_quark() {
            switch code {
            case Int32(GST_CORE_ERROR_MISSING_PLUGIN.rawValue): return .decoderNotFound
            case Int32(GST_CORE_ERROR_NEGOTIATION.rawValue): return .unsupportedOutputSettings
            default: return .unknown
            }
        }
        if domain == gst_stream_error_quark() {
            switch code {
            case Int32(GST_STREAM_ERROR_CODEC_NOT_FOUND.rawValue): return .decoderNotFound
            case Int32(GST_STREAM_ERROR_TYPE_NOT_FOUND.rawValue), Int32(GST_STREAM_ERROR_WRONG_TYPE.rawValue):
                return .fileFormatNotRecognized
            case Int32(GST_STREAM_ERROR_DEMUX.rawValue), Int32(GST_STREAM_ERROR_FORMAT.rawValue):
                return .fileFailedToParse
            case Int32(GST_STREAM_ERROR_DECODE.rawValue): return .decodeFailed
            case Int32(GST_STREAM_ERROR_DECRYPT.rawValue), Int32(GST_STREAM_ERROR_DECRYPT_NOKEY.rawValue):
                return .undecodableMediaData
            case Int32(GST_STREAM_ERROR_NOT_IMPLEMENTED.rawValue): return .formatUnsupported
            default: return .decodeFailed
            }
        }
        if domain == gst_resource_error_quark() { return .failedToLoadMediaData }
        return .unknown
    }

    /// The TrackError for an ERROR message (message: transfer none): GStreamer's text, then in parentheses the
    /// factory of the element that posted it and the reason from its debug string — "This file contains no playable
    /// streams. (qtdemux: no known streams found)". The debug string's first line (source file, line, function and
    /// the element's path, whose names count the pipelines a process made) is left out, so the same failure of the
    /// same bytes reads the same in every process.
    static func fromMessage(_ message: GstRef<GstMessageObject>) -> TrackError {
        guard let details = message.errorDetails else { return TrackError(.unknown, "GStreamer error without details") }
        let code = code(domain: details.domain, code: details.code)
        var text = details.message ?? "GStreamer error"
        let (source, debugText) = (message.sourceFactory, details.debug ?? "")
        var lines = debugText.split(separator: "\n").map { String($0.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()) }
            .filter { !$0.isEmpty }
        if let first = lines.first, first.contains("): ") && first.contains(" (): ") { lines.removeFirst() }
        let reason = lines.joined(separator: "; ")
        switch (source, reason.isEmpty) {
        case (let source?, false): text += " (\(source): \(reason))"
        case (let source?, true): text += " (\(source))"
        case (nil, false): text += " (\(reason))"
        case (nil, true): break
        }
        return TrackError(code, text)
    }

    /// Which of the errors one failure posts is reported: the lowest rank (of equal ranks, the first posted). The
    /// cause comes before its consequences, whichever thread posts first: trackd's own refusals (a limit, the wrong
    /// track) 0; reading the file 1; the stream's own errors (demuxing, decoding, a missing decoder) 2; other core
    /// and library errors (negotiation) 3; "Internal data stream error", which every element whose streaming
    /// thread a failure downstream stops posts, 4.
    static func rank(_ message: GstRef<GstMessageObject>) -> Int {
        switch message.type {
        case GST_MESSAGE_APPLICATION: return 0
        case GST_MESSAGE_ELEMENT: return 2  // a missing plugin
        case GST_MESSAGE_ERROR: break
        default: return 5
        }
        guard let error = message.errorDetails else { return 5 }
        let domain = error.domain
        if domain == gst_resource_error_quark() { return 1 }
        if domain == gst_stream_error_quark() { return error.code == Int32(GST_STREAM_ERROR_FAILED.rawValue) ? 4 : 2 }
        if domain == gst_core_error_quark() && error.code == Int32(GST_CORE_ERROR_MISSING_PLUGIN.rawValue) { return 2 }
        return 3
    }
}

// ── Bus ────────────────────────────────────────────────────────────────────────────────────────────────────────────

/// Application messages the pad-added handlers post to stop a wait early.
enum AppMessage {
    static let noSuchTrack = "trackd-no-such-track"
    static let wrongMediaType = "trackd-wrong-media-type"
    static let notDecodable = "trackd-not-decodable"
    /// A DecodeLimits refusal (DecodeGuard); the text names the limit and the option.
    static let limitExceeded = "trackd-limit-exceeded"
    /// A read the track cannot give exactly (OpenGOPTimes); the text says why.
    static let notSupported = "trackd-not-supported"

    /// Posts an application message named `name` with a string field "text" on `bus` (the pipeline's).
    static func post(_ bus: GstRef<GstBusObject>, _ name: String, text: String) {
        bus.postApplication(name, text: text)
    }

    static func text(_ message: GstRef<GstMessageObject>) -> (name: String, text: String)? {
        message.applicationText
    }
}

/// nil for an uninteresting message; the TrackError for an error, a missing plugin (unless `ignoreMissingPlugins`:
/// discovery needs no decoder, and qtdemux reports a codec it does not know as missing) or one of our application
/// errors.
func checkMessage(_ message: GstRef<GstMessageObject>, context: String, ignoreMissingPlugins: Bool = false) -> TrackError? {
    switch message.type {
    case GST_MESSAGE_ERROR:
        var e = GstErrors.fromMessage(message)
        e.message = "\(context): \(e.message)"
        return e
    case GST_MESSAGE_ELEMENT where !ignoreMissingPlugins && message.isMissingPlugin:
        let what = message.missingPluginDescription ?? "a plug-in"
        return TrackError(.decoderNotFound, "\(context): no GStreamer decoder installed for \(what)")
    case GST_MESSAGE_APPLICATION:
        guard let (name, text) = AppMessage.text(message) else { return nil }
        switch name {
        case AppMessage.noSuchTrack: return TrackError(.invalidArgument, text)
        case AppMessage.wrongMediaType: return TrackError(.unsupportedOutputSettings, text)
        case AppMessage.notDecodable: return TrackError(.decoderNotFound, "\(context): \(text)")
        case AppMessage.limitExceeded: return TrackError(.limitExceeded, "\(context): \(text)")
        case AppMessage.notSupported: return TrackError(.operationNotSupportedForAsset, "\(context): \(text)")
        default: return nil
        }
    default:
        return nil
    }
}

func monotonicNs() -> UInt64 { UInt64(g_get_monotonic_time()) &* 1000 }

// ── Track identity ─────────────────────────────────────────────────────────────────────────────────────────────────

/// How a source's pads name its tracks (containerTrackID): its container by its first bytes and, for an Ogg, the
/// serial numbers of its logical streams in the order their first pages come (OggLastPacket.streamSerials).
struct TrackNumbering: Sendable {
    var container: TrackTimescale.Container = .other
    var oggSerials: [UInt32] = []

    init() {}

    /// The numbering of the file `fd` (read with pread; the caller keeps it open).
    init(fd: Int32) {
        container = TrackTimescale.container(fd: fd)
        oggSerials = container == .other && OggLastPacket.isOgg(fd: fd) ? OggLastPacket.streamSerials(fd: fd) : []
    }
}

/// The container's track id of a parsebin pad, from the last component of its stream id — the id ffprobe gives the
/// stream: qtdemux writes the track_ID and matroskademux the TrackNumber in decimal ("/%03u"); tsdemux writes the PID
/// and mpegpsdemux the PES stream id in hex ("/%08x", "/%02x"), so an MPEG-TS track is its PID and an MPEG-PS track
/// is 0x100 + the stream id for MPEG audio and video (0xC0–0xEF: ffmpeg's start code, 0x1C0–0x1EF) and the
/// substream id of private stream 1 otherwise. (Read as decimal, a PID such as 0x100 became 100 and 0x1E1 none;
/// with no number, parsebin's pad order numbered an MPEG-PS's tracks, and it differs from run to run between two
/// audio tracks.) oggdemux writes the stream's serial number in hex ("/%08x"), which ffprobe does not give as an id:
/// an Ogg track is numbered from 1 in ffprobe's stream order, the order of the streams' first pages (by pad order,
/// two Vorbis tracks swapped between opens, and a serial whose hex had only decimal digits was read as a decimal
/// number). nil when the stream id has no such last component (elementary streams) or names an Ogg stream not among
/// the file's first pages (a later chain's): callers then use the 1-based pad order.
func containerTrackID(_ pad: GstRef<GstPadObject>, numbering: TrackNumbering) -> UInt32? {
    guard let id = pad.streamID, let last = id.split(separator: "/").last, !last.isEmpty, last.allSatisfy(\.isASCII) else {
        return nil
    }
    if !numbering.oggSerials.isEmpty {
        guard last.count == 8, let serial = UInt32(last, radix: 16),
              let at = numbering.oggSerials.firstIndex(of: serial) else { return nil }
        return UInt32(at + 1)
    }
    switch numbering.container {
    case .transportStream:
        guard last.count == 8, let pid = UInt32(last, radix: 16), pid > 0 else { return nil }
        return pid
    case .programStream:
        guard last.count == 2, let streamID = UInt32(last, radix: 16), streamID > 0 else { return nil }
        return (0xC0...0xEF).contains(streamID) ? 0x100 + streamID : streamID
    default:
        guard last.allSatisfy(\.isNumber), let n = UInt32(last), n > 0 else { return nil }
        return n
    }
}
