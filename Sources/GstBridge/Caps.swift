// Reading caps: always through gst_structure_get_* (never by splitting the caps string).
import CGStreamer
import CGstShim
import MediaIndex
import TrackdProtocol

/// Typed access to the first structure of a caps, which it keeps alive.
struct CapsView {
    let caps: GstRef<GstCapsObject>

    init?(_ caps: GstRef<GstCapsObject>?) {
        guard let caps, unsafe gst_caps_get_size(caps.pointer) > 0, unsafe gst_caps_get_structure(caps.pointer, 0) != nil else {
            return nil
        }
        self.caps = caps
    }

    /// The first structure (transfer none: the caps, which this view holds, owns it).
    private var structure: UnsafePointer<GstStructure> { unsafe UnsafePointer(gst_caps_get_structure(caps.pointer, 0)!) }

    var name: String { unsafe String(cString: gst_structure_get_name(structure)) }

    func int(_ field: String) -> Int32? {
        var v: gint = 0
        return unsafe gst_structure_get_int(structure, field, &v) != 0 ? v : nil
    }

    /// An unsigned field (h264parse's `bit-depth-luma` is a guint); also accepts a non-negative gint.
    func uint(_ field: String) -> UInt32? {
        var v: guint = 0
        if unsafe gst_structure_get_uint(structure, field, &v) != 0 { return v }
        return int(field).flatMap { $0 >= 0 ? UInt32($0) : nil }
    }

    /// A GstBitmask field (audio `channel-mask`).
    func uint64(_ field: String) -> UInt64? {
        guard let value = unsafe gst_structure_get_value(structure, field),
              unsafe value.pointee.g_type == gst_bitmask_get_type() else {
            return nil
        }
        return unsafe UInt64(gst_value_get_bitmask(value))
    }

    func string(_ field: String) -> String? {
        unsafe gst_structure_get_string(structure, field).map { unsafe String(cString: $0) }
    }

    func fraction(_ field: String) -> (Int32, Int32)? {
        var n: gint = 0, d: gint = 0
        return unsafe gst_structure_get_fraction(structure, field, &n, &d) != 0 ? (n, d) : nil
    }

    /// Bytes of a buffer-typed field (codec_data), or [] when absent.
    func bufferBytes(_ field: String) -> [UInt8] {
        guard let buffer = unsafe swift_gst_structure_get_buffer(structure, field) else { return [] }
        return unsafe bytes(of: buffer)
    }

    /// All bytes of `buffer` (transfer none).
    private func bytes(of buffer: UnsafeMutablePointer<GstBuffer>) -> [UInt8] {
        let size = unsafe Int(gst_buffer_get_size(buffer))
        guard size > 0 else { return [] }
        return unsafe [UInt8](unsafeUninitializedCapacity: size) { out, count in
            count = unsafe Int(gst_buffer_extract(buffer, 0, out.baseAddress, gsize(size)))
        }
    }

    /// The codec configuration a passthrough output reports: the caps' `codec_data` (avcC, hvcC, esds…), else for
    /// FLAC the 34-byte STREAMINFO (what ffmpeg has as extradata), from the metadata blocks flacparse and
    /// matroskademux put in `streamheader`; empty when there is neither.
    var codecConfiguration: [UInt8] {
        let data = bufferBytes("codec_data")
        guard data.isEmpty, name == "audio/x-flac" else { return data }
        return flacStreamInfo ?? []
    }

    /// FLAC's block size when every frame but the last has it (STREAMINFO's minimum and maximum block size equal,
    /// RFC 9639 §8.2: libFLAC's and ffmpeg's encoders); nil for a variable block size or without STREAMINFO.
    var flacFixedBlockSize: Int? {
        guard let info = flacStreamInfo, info.count >= 4 else { return nil }
        let minimum = Int(info[0]) << 8 | Int(info[1]), maximum = Int(info[2]) << 8 | Int(info[3])
        return minimum == maximum && minimum > 0 ? minimum : nil
    }

    /// STREAMINFO from a `streamheader` buffer that is its metadata block (type 0, length 34), or Ogg FLAC's mapping
    /// header (0x7F "FLAC", version, header count, "fLaC", then that block).
    private var flacStreamInfo: [UInt8]? {
        for bytes in streamHeaders where bytes.count == 38 || bytes.count == 51 {
            let block = bytes.count == 51 && bytes.starts(with: [0x7F, 0x46, 0x4C, 0x41, 0x43]) ? bytes.dropFirst(13) : bytes[...]
            let start = block.startIndex
            if block.count == 38, block[start] & 0x7F == 0, block[start + 1] == 0, block[start + 2] == 0, block[start + 3] == 34 {
                return Array(block.dropFirst(4))
            }
        }
        return nil
    }

    /// The buffers of the `streamheader` array (codec headers a parser also pushes as buffers flagged HEADER: FLAC's
    /// metadata blocks, Vorbis/Opus/Theora headers); [] when there is none.
    var streamHeaders: [[UInt8]] {
        guard let array = unsafe gst_structure_get_value(structure, "streamheader"),
              unsafe array.pointee.g_type == gst_value_array_get_type() else { return [] }
        var headers: [[UInt8]] = []
        for i in unsafe 0..<gst_value_array_get_size(array) {
            guard let item = unsafe gst_value_array_get_value(array, i), let boxed = unsafe g_value_get_boxed(item) else {
                continue
            }
            unsafe headers.append(bytes(of: UnsafeMutablePointer(mutating: boxed.assumingMemoryBound(to: GstBuffer.self))))
        }
        return headers
    }

    var mediaType: MediaType {
        let n = name
        if n.hasPrefix("video/") || n == "image/jpeg" || n == "image/png" { return .video }
        if n.hasPrefix("audio/") { return .audio }
        if n.hasPrefix("text/") || n.hasPrefix("subpicture/") || n.hasPrefix("application/x-subtitle")
            || n == "application/x-ssa" || n == "application/x-ass" || n == "application/x-usf" { return .subtitle }
        return .other
    }

    /// H.264 caps (stream-format avc/avc3 with their avcC, or byte-stream): a reader of their samples (its `framing`:
    /// how their NAL units are delimited); nil for other caps, or avc without a well-formed avcC.
    var h264Pictures: H264Pictures? {
        guard name == "video/x-h264" else { return nil }
        switch string("stream-format") {
        case "avc", "avc3": return H264Pictures(avcC: bufferBytes("codec_data"))
        case "byte-stream": return H264Pictures(framing: .annexB)
        default: return nil
        }
    }

    /// The QuickTime/CoreMedia codec code for compressed caps; "????" when unknown.
    var codec: FourCC {
        switch name {
        case "video/x-h264": return string("stream-format") == "avc3" ? "avc3" : "avc1"
        case "video/x-h265": return string("stream-format") == "hev1" ? "hev1" : "hvc1"
        case "video/x-vp9": return "vp09"
        case "video/x-vp8": return "vp08"
        case "video/x-av1": return "av01"
        case "image/jpeg": return "jpeg"
        case "image/png": return "png "
        case "video/x-prores":
            switch string("variant") {
            case "proxy": return "apco"
            case "lt": return "apcs"
            case "standard": return "apcn"
            case "hq": return "apch"
            case "4444": return "ap4h"
            case "4444xq": return "ap4x"
            default: return formatFourCC ?? "apcn"
            }
        case "video/mpeg":
            switch int("mpegversion") {
            case 4: return "mp4v"
            case 2: return "mp2v"
            default: return "mp1v"
            }
        case "video/x-raw": return "raw "
        case "audio/mpeg":
            switch int("mpegversion") {
            case 4, 2: return "mp4a"
            case 1 where int("layer") == 3: return ".mp3"
            case 1 where int("layer") == 2: return ".mp2"
            case 1: return ".mp1"
            default: return "????"
            }
        case "audio/x-opus": return "Opus"
        case "audio/x-flac": return "fLaC"
        case "audio/x-raw": return "lpcm"
        case "audio/x-ac3": return "ac-3"
        case "audio/x-eac3": return "ec-3"
        case "audio/x-alac": return "alac"
        case "audio/x-vorbis": return "vorb"
        case "audio/x-alaw": return "alaw"
        case "audio/x-mulaw": return "ulaw"
        case "text/x-raw", "application/x-subtitle-tx3g": return "tx3g"
        default: return formatFourCC ?? "????"
        }
    }

    /// Bits per luma sample and chroma subsampling as coded. The parsers (h264parse, h265parse, vp9parse, av1parse)
    /// put them in their caps as `bit-depth-luma` (guint) and `chroma-format` ("4:2:0" …); qtdemux's ProRes caps
    /// carry only the variant, whose format is fixed by Apple's ProRes spec: 422 variants 10-bit 4:2:2, 4444
    /// variants 12-bit 4:4:4. (0, .unknown) when nothing says.
    func sampling(codec: FourCC) -> (bits: UInt8, chroma: ChromaSubsampling) {
        var bits = uint("bit-depth-luma").map { UInt8(clamping: $0) } ?? 0
        var chroma = string("chroma-format").flatMap(ChromaSubsampling.init(text:)) ?? .unknown
        switch codec {
        case "apco", "apcs", "apcn", "apch":
            if bits == 0 { bits = 10 }
            if chroma == .unknown { chroma = .yuv422 }
        case "ap4h", "ap4x":
            if bits == 0 { bits = 12 }
            if chroma == .unknown { chroma = .yuv444 }
        default:
            break
        }
        return (bits, chroma)
    }

    /// The sample-entry fourcc when qtdemux did not know the codec: it names the caps
    /// "video/x-gst-fourcc-abcd" (or audio/…); otherwise a four-character `format` string field.
    private var formatFourCC: FourCC? {
        let n = name
        for prefix in ["video/x-gst-fourcc-", "audio/x-gst-fourcc-"] where n.hasPrefix(prefix) {
            if let f = FourCC(String(n.dropFirst(prefix.count))) { return f }
        }
        if let s = string("format"), let f = FourCC(s) { return f }
        return nil
    }
}

/// Describes one parsebin pad (caps, tags, duration) as a TrackDescription: from `caps` (the first buffer's) when given,
/// else the pad's current caps; from `tags` (the pad's tags when its first buffer passed) when given, else the pad's
/// tags now; starting at `start`, its first PTS on the asset's timeline (nil: at 0). Its codec configuration is the
/// `codec_data` of `configurationCaps` (the pad's upstreamCodecDataCaps when its first buffer passed) when given,
/// else of the pad's upstreamCodecDataCaps now: the record the container stores (MP4/MOV's avcC/hvcC/esds,
/// Matroska's CodecPrivate — what a passthrough output reports), else the parser's (an MPEG-TS stream's avcC,
/// which h264parse writes from the parameter sets); without either, the caps' own (FLAC's STREAMINFO).
func describeTrack(pad: GstRef<GstPadObject>, id: UInt32, start: MediaTime?, caps firstCaps: GstRef<GstCapsObject>? = nil,
                   configurationCaps: GstRef<GstCapsObject>? = nil, tags: [EventTags]? = nil) -> TrackDescription? {
    guard let view = CapsView(firstCaps ?? pad.currentCaps) else { return nil }
    var track = TrackDescription(id: id, mediaType: view.mediaType, codec: view.codec)
    switch track.mediaType {
    case .video:
        track.width = UInt32(max(0, view.int("width") ?? 0))
        track.height = UInt32(max(0, view.int("height") ?? 0))
        if let (n, d) = view.fraction("framerate"), n > 0, d > 0 { track.nominalFrameRate = Double(n) / Double(d) }
        let depth = view.int("depth") ?? 24
        track.depth = depth == 32 ? 32 : 24
        track.hasAlpha = depth == 32
        (track.bitsPerComponent, track.chromaSubsampling) = view.sampling(codec: track.codec)
        if let (n, d) = view.fraction("pixel-aspect-ratio"), n > 0, d > 0 {
            track.pixelAspectRatio = PixelAspectRatio(numerator: UInt32(n), denominator: UInt32(d))
        }
        if let colorimetry = view.caps.colorimetry { track.colorimetry = colorimetry }
    case .audio:
        track.sampleRate = UInt32(max(0, view.int("rate") ?? 0))
        track.channels = UInt32(max(0, view.int("channels") ?? 0))
        track.channelLayout = channelLayoutName(channels: track.channels, mask: view.uint64("channel-mask"),
                                                codec: track.codec)
    default:
        break
    }
    track.profile = view.string("profile") ?? ""
    track.level = view.string("level") ?? ""
    let stored = (configurationCaps ?? pad.upstreamCodecDataCaps).flatMap { CapsView($0)?.bufferBytes("codec_data") }
    track.codecConfiguration = stored ?? view.codecConfiguration
    // The colour the SPS states, over the demuxer's (H.264) or in its place (HEVC).
    track.colorimetry = VideoSignalType.colour(of: track.codec, configuration: track.codecConfiguration, over: track.colorimetry)
    if let duration = pad.duration, duration >= 0 { track.duration = .nanoseconds(duration) }
    // The first sample on the asset's timeline (the first in decode order: a closed GOP's first frame is also the
    // first shown); never negative (AAC priming before an edit list).
    track.timeRangeStart = start.flatMap { $0.isValid && $0.value > 0 ? $0 : nil } ?? .zero
    readTags(tags ?? pad.stickyTags, into: &track)
    return track
}

/// ffmpeg's name for a channel layout, from the channel count and GStreamer's channel-mask (bit n is
/// GstAudioChannelPosition n: 0 front left, 1 front right, 2 front centre, 3 LFE, 4/5 rear left/right, 10/11 side
/// left/right). GStreamer leaves the mask out for mono and stereo, and aacparse/flacparse for every stream (then the
/// layout the codec defines for the channel count). "" for layouts without a common name.
func channelLayoutName(channels: UInt32, mask: UInt64?, codec: FourCC) -> String {
    if mask == nil && codec == "mp4a" {
        // AAC without a mask in the caps: the layout its channel configuration defines (ISO 14496-3 1.6.3.4).
        switch channels {
        case 3: return "3.0"
        case 4: return "4.0"
        case 5: return "5.0"
        case 6: return "5.1"
        case 8: return "7.1(wide)"
        default: break
        }
    }
    if mask == nil && codec == "fLaC" {
        // FLAC: the channel assignment its format defines for each count (RFC 9639 9.1.3).
        switch channels {
        case 3: return "3.0"
        case 4: return "quad"
        case 5: return "5.0"
        case 6: return "5.1"
        case 7: return "6.1"
        case 8: return "7.1"
        default: break
        }
    }
    switch (channels, mask ?? 0) {
    case (1, 0), (1, 0x4): return "mono"
    case (2, 0), (2, 0x3): return "stereo"
    case (3, 0xB): return "2.1"
    case (3, 0x7): return "3.0"
    case (4, 0x33): return "quad"
    case (4, 0xC03): return "quad(side)"
    case (5, 0x37): return "5.0"
    case (5, 0xC07): return "5.0(side)"
    case (6, 0x3F): return "5.1"
    case (6, 0xC0F): return "5.1(side)"
    case (8, 0xC3F): return "7.1"
    default: return ""
    }
}

/// Language, rotation and bit rate from a pad's TAG events (stream-scoped and global).
private func readTags(_ events: [EventTags], into track: inout TrackDescription) {
    for tags in events {
        if track.language.isEmpty, let language = tags.language, language != "und" {
            // qtdemux/matroskademux give ISO 639-1 where one exists ("fr"); AVFoundation reports ISO 639-2/T ("fra").
            track.language = iso639_2T(language) ?? language
        }
        if track.bitRate == 0, let rate = tags.bitRate ?? tags.nominalBitRate { track.bitRate = rate }
        if let orientation = tags.orientation {
            // "rotate-90", "flip-rotate-270" …: the number is the clockwise rotation.
            if let degrees = orientation.split(separator: "-").last.flatMap({ Int32($0) }), [0, 90, 180, 270].contains(degrees) {
                track.rotation = degrees
            }
        }
    }
}

/// A buffer timestamp as stream time (the asset's timeline: edit lists applied by the demuxer's segment), also
/// for positions before the segment start (negative DTS, frames before an accurate seek target).
func streamTime(_ position: GstClockTime, segment: GstSegment?) -> MediaTime {
    guard position != clockTimeNone else { return .invalid }
    guard var segment, segment.format == GST_FORMAT_TIME else { return mediaTime(position) }
    var out: guint64 = 0
    switch unsafe gst_segment_to_stream_time_full(&segment, GST_FORMAT_TIME, position, &out) {
    case 1 where out <= guint64(Int64.max): return .nanoseconds(Int64(out))
    case -1 where out <= guint64(Int64.max): return .nanoseconds(-Int64(out))
    default: return .invalid
    }
}
