import TrackdProtocol

/// The common name of a codec four-char code trackd reports (the ones GstBridge maps caps to), or nil.
func codecName(_ codec: FourCC) -> String? {
    switch codec.description {
    case "avc1", "avc3": "H.264"
    case "hvc1", "hev1": "HEVC"
    case "vp08": "VP8"
    case "vp09": "VP9"
    case "av01": "AV1"
    case "jpeg": "Motion JPEG"
    case "png ": "PNG"
    case "apco": "ProRes 422 Proxy"
    case "apcs": "ProRes 422 LT"
    case "apcn": "ProRes 422"
    case "apch": "ProRes 422 HQ"
    case "ap4h": "ProRes 4444"
    case "ap4x": "ProRes 4444 XQ"
    case "mp4v": "MPEG-4 Part 2"
    case "mp2v": "MPEG-2 Video"
    case "mp1v": "MPEG-1 Video"
    case "raw ": "uncompressed video"
    case "mp4a": "AAC"
    case ".mp3": "MP3"
    case ".mp2": "MPEG-1 Layer II"
    case ".mp1": "MPEG-1 Layer I"
    case "Opus": "Opus"
    case "fLaC": "FLAC"
    case "lpcm": "PCM"
    case "ac-3": "AC-3"
    case "ec-3": "E-AC-3"
    case "alac": "ALAC"
    case "vorb": "Vorbis"
    case "alaw": "A-law"
    case "ulaw": "µ-law"
    case "tx3g": "timed text"
    default: nil
    }
}
