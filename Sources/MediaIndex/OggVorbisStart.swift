import SystemCalls

/// Where the first audio packets of an Ogg Vorbis stream lie, read from the file's first pages (RFC 3533) with the
/// block sizes libvorbis reads (VorbisDurations), without GStreamer: the page on which the first audio packet ends,
/// and the audio packets ending on it, lasting what ffmpeg's Vorbis parser gives them after a reset (the first
/// follows a short block; it decodes to nothing). Those after the first decode to `t` frames, which end at the page's
/// granule position `g` (libvorbis's rule, `vorbis_synthesis_blockin`, and ffmpeg's start reckoning): they start at
/// g − t, and the first packet before them. A page that is also the stream's last (EOS: the whole stream on one
/// audio page) whose granule position is below t is cut at its end, not at its start (libvorbis): they start at 0,
/// the last packet ends at g and the rest of it is end padding. ffmpeg reckons no start on a stream's last page and
/// puts the first packet at 0: on such a stream its packets are 128 frames late (libvorbis's short blocks) and its
/// decoder drops the source's last 128 frames (PROTOCOL.md, Vorbis). oggdemux (GStreamer 1.22) reckons the start
/// alike but cuts a start below 0 to 0 on any page.
public struct OggVorbisStart: Equatable, Sendable {
    /// The first audio packet's PTS, in frames of the stream's rate.
    public var start: Int64
    /// Where each audio packet ending on the first audio page ends (frames), in order; the last at its granule
    /// position.
    public var ends: [Int64]
    /// That page is the stream's last (EOS).
    public var isLast: Bool

    /// The first bytes read: the three headers (a comment header with a picture can be larger: then nothing is
    /// read) and the first audio page (at most 65 307 bytes).
    public static let headBytes = 1 << 20

    /// Of the Ogg file `fd` (read with pread; the caller keeps it open); nil when it holds no Vorbis stream, more
    /// than one, its first `headBytes` do not hold its headers and first audio page whole, or that page's granule
    /// position is negative.
    public static func read(fd: Int32) -> OggVorbisStart? {
        let file = FileDescriptor(taking: fd)
        var head: [UInt8] = []
        if let size = try? file.regularFileSize(), size > 27 {
            head = (try? [UInt8](preading: file, count: Int(min(size, UInt64(headBytes))), at: 0)) ?? []
        }
        _ = file.take()  // the caller's descriptor: not closed here
        return read(head: head)
    }

    /// Of `head`, the first bytes of an Ogg file.
    public static func read(head: [UInt8]) -> OggVorbisStart? {
        guard let (headers, packets, granule, isLast) = firstAudioPage(head), !packets.isEmpty,
              var durations = VorbisDurations(headers: headers, container: .ogg) else { return nil }
        var lengths: [Int64] = []
        for packet in packets {
            guard let frames = durations.next(packet) else { return nil }
            lengths.append(Int64(frames))
        }
        // What the packets after the first decode to, and where that starts: before the granule position, or at 0
        // on a stream's only page that the granule position cuts at its end.
        let decoded = lengths.dropFirst().reduce(0, +)
        guard granule >= 0 else { return nil }
        let start = (isLast && granule < decoded ? 0 : granule - decoded) - lengths[0]
        var ends: [Int64] = []
        var end = start
        for length in lengths.dropLast() {
            end += length
            ends.append(end)
        }
        return OggVorbisStart(start: start, ends: ends + [granule], isLast: isLast)
    }

    /// The three headers of the file's one Vorbis stream, the first bytes (16) of the audio packets ending on the page
    /// where its first audio packet ends, that page's granule position and whether it is the stream's last.
    static func firstAudioPage(_ head: [UInt8]) -> (headers: [[UInt8]], packets: [[UInt8]], granule: Int64, isLast: Bool)? {
        let magic: [UInt8] = [1] + Array("vorbis".utf8)
        var serial: UInt32?
        var headers: [[UInt8]] = [], packets: [[UInt8]] = []
        var partial: [UInt8] = []
        var at = 0
        while let page = OggLastPacket.page(head, at: at) {
            at = page.body.upperBound
            let body = Array(head[page.body])
            if page.isFirst, body.starts(with: magic) {
                guard serial == nil else { return nil }  // a second Vorbis stream: which one is the track's is not known
                serial = page.serial
            }
            guard page.serial == serial else { continue }
            var offset = 0
            for lace in page.lacing {
                partial += body[offset..<(offset + Int(lace))]
                offset += Int(lace)
                guard lace < 255 else { continue }
                if headers.count < 3 { headers.append(partial) } else { packets.append(Array(partial.prefix(16))) }
                partial = []
            }
            if !packets.isEmpty { return (headers, packets, page.granule, page.isLast) }
        }
        return nil
    }
}
