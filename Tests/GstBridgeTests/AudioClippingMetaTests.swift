import CGStreamer
import Foundation
@testable import GstBridge
import MediaVocabulary
import TestSupport
import Testing

/// The GstAudioClippingMeta on each passthrough buffer (what a decoder drops): at most one, the trims the sample
/// carries to the client, and those are ffprobe's Skip Samples side data where it states any — on ffmpeg-made AAC in
/// MP4 (an edit skipping 1024 frames of priming and ending inside the last packet: StoredSampleFeeder clips by the
/// edit, qtdemux 1.22 adds none; the last packet, which the feeder chains in itself, passes its probe again and had
/// two metas), Opus in WebM and Matroska (matroskademux's CodecDelay and DiscardPadding; no feeder) and MP3 in
/// Matroska (its last block's DiscardPadding, read from the file: matroskademux 1.22 states it for Opus only; no meta).
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct AudioClippingMetaTests {
    static let sine = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2"]
    static let files = [
        "aac.mp4": sine + ["-c:a", "aac"], "opus.webm": sine + ["-c:a", "libopus"],
        "opus-short.mka": sine + ["-c:a", "libopus", "-frame_duration", "2.5"],
        "mp3.mka": sine + ["-c:a", "libmp3lame"],
    ]

    /// The buffer's clipping metas (start, end), in their order.
    static func metas(_ sample: PulledSample) -> [(start: UInt64, end: UInt64, samples: Bool)] {
        guard let buffer = unsafe gst_sample_get_buffer(sample.sample.pointer) else { return [] }
        var state: gpointer?
        var found: [(start: UInt64, end: UInt64, samples: Bool)] = []
        while let meta = unsafe gst_buffer_iterate_meta_filtered(buffer, &state, gst_audio_clipping_meta_api_get_type()) {
            let clip = unsafe UnsafeRawPointer(meta).assumingMemoryBound(to: GstAudioClippingMeta.self).pointee
            found.append((UInt64(clip.start), UInt64(clip.end), clip.format == GST_FORMAT_DEFAULT))
        }
        return found
    }

    static func frames(_ time: MediaTime?) -> UInt64 {
        guard let time, time.isNumeric, time.value > 0 else { return 0 }
        return UInt64(time.value * 48000 / Int64(time.timescale))
    }

    @Test(arguments: files.keys.sorted()) func oneClippingPerPassthroughSample(_ name: String) throws {
        try Gst.initialize()
        let path = try Fixtures.make("clipping-" + name, try #require(Self.files[name]))
        let packets = try Probe.packets(path, "a:0")
        let pipeline = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .passthrough, timeRange: .everything)
        defer { pipeline.stop() }
        var pulled: [PulledSample] = []
        loop: while true {
            switch pipeline.pull(timeoutNs: 10_000_000_000) {
            case .sample(let s): pulled.append(s)
            case .endOfStream: break loop
            case .timeout, .failed: Issue.record("\(name): the read did not end"); break loop
            }
        }
        try #require(pulled.count == packets.count, "\(name): \(pulled.count) samples, ffprobe lists \(packets.count)")
        for (i, (s, p)) in zip(pulled, packets).enumerated() {
            let metas = Self.metas(s)
            let trims = (Self.frames(s.trims?.atStart), Self.frames(s.trims?.atEnd))
            #expect(metas.count <= 1, "\(name) \(i): \(metas.count) clipping metas \(metas)")
            if let meta = metas.first {
                #expect(meta.samples && (meta.start, meta.end) == trims, "\(name) \(i): meta \(meta), trims \(trims)")
            }
            if let skip = p.skip {  // ffprobe's Skip Samples side data, where it states one
                #expect(trims == (UInt64(skip.start), UInt64(skip.end)), "\(name) \(i): trims \(trims), ffprobe \(skip)")
            }
        }
    }
}
