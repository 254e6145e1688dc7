import Foundation
import TrackdProtocol
import TestSupport
import Testing

/// Multichannel sources with a different constant level in every channel (0.1, 0.2 … in the file's order), so the
/// order of the output's channels can be read off their content.
enum LayoutMedia {
    static func levels(_ n: Int, layout: String) -> [String] {
        let expr = (1...n).map { "0.\($0)" }.joined(separator: "|")
        return ["-f", "lavfi", "-i", "aevalsrc=\(expr):c=\(layout):s=48000:d=0.25"]
    }
    /// 5.1 with back surrounds (ffmpeg's "5.1": FL FR FC LFE BL BR; GStreamer: REAR_LEFT/RIGHT).
    static let back = Media.make("51-back.wav", levels(6, layout: "5.1") + ["-c:a", "pcm_s16le"])
    static let backFLAC = Media.make("51-back.flac", levels(6, layout: "5.1") + ["-c:a", "flac", "-sample_fmt", "s16"])
    /// 5.1 with side surrounds (FL FR FC LFE SL SR; GStreamer: SIDE_LEFT/RIGHT).
    static let side = Media.make("51-side.wav", levels(6, layout: "5.1(side)") + ["-c:a", "pcm_s16le"])
    /// 4.0: FL FR FC BC.
    static let four = Media.make("40.wav", levels(4, layout: "4.0") + ["-c:a", "pcm_s16le"])
}

/// AVChannelLayoutKey applied: the output's channels follow the layout's order. Oracle: ffmpeg's channelmap filter
/// with the same speakers (byte for byte, the levels being exact in 16 bits).
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct ChannelLayoutTests {
    static func tag(_ id: UInt32, _ channels: UInt32) -> String { "{\"mChannelLayoutTag\": \((id << 16) | channels)}" }

    func ffmpeg(_ file: String, map: String?) throws -> Data {
        let filter = map.map { ["-af", "channelmap=map=\($0)"] } ?? []
        let r = try run("ffmpeg", ["-v", "error", "-i", file] + filter + ["-f", "s16le", "-"])
        #expect(r.status == 0, "ffmpeg: \(r.stderr)")
        return r.stdout
    }

    func read(_ daemon: Daemon, _ file: String, _ args: [String]) throws -> (status: Int32, bytes: Data, stderr: String) {
        let dir = Env.tempDir("layout")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try daemon.trackctl(["read", file] + args + ["--output", dir + "/out.pcm"])
        return (r.status, FileManager.default.contents(atPath: dir + "/out.pcm") ?? Data(), r.stderr)
    }

    @Test func tagsReorderTheChannels() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        // (file, layout, the same speakers in ffmpeg's names (nil: the file's order))
        let cases: [(String, String, String?)] = [
            (LayoutMedia.back, Self.tag(121, 6), nil),  // MPEG_5_1_A: L R C LFE Ls Rs, GStreamer's own order
            (LayoutMedia.back, Self.tag(123, 6), "FL|FC|FR|BL|BR|LFE"),  // MPEG_5_1_C: L C R Ls Rs LFE
            (LayoutMedia.back, Self.tag(124, 6), "FC|FL|FR|BL|BR|LFE"),  // MPEG_5_1_D: C L R Ls Rs LFE
            (LayoutMedia.back, Self.tag(122, 6), "FL|FR|BL|BR|FC|LFE"),  // MPEG_5_1_B: L R Ls Rs C LFE
            (LayoutMedia.backFLAC, Self.tag(123, 6), "FL|FC|FR|BL|BR|LFE"),
            (LayoutMedia.side, Self.tag(121, 6), nil),  // Ls/Rs are the source's side pair: no remix
            (LayoutMedia.side, Self.tag(123, 6), "FL|FC|FR|SL|SR|LFE"),
            // The channel bitmap (L R C LFE Ls Rs): bit order, GStreamer's own.
            (LayoutMedia.back, "{\"mChannelLayoutTag\": 65536, \"mChannelBitmap\": 63}", nil),
            // Channel descriptions by label: Rs Ls LFE C R L.
            (LayoutMedia.back, "{\"mChannelLayoutTag\": 0, \"mChannelDescriptions\": [{\"mChannelLabel\": 6}, "
                + "{\"mChannelLabel\": 5}, {\"mChannelLabel\": 4}, {\"mChannelLabel\": 3}, {\"mChannelLabel\": 2}, "
                + "{\"mChannelLabel\": 1}]}", "BR|BL|LFE|FC|FR|FL"),
        ]
        let plain = try read(daemon, LayoutMedia.back, ["--channels", "6"])
        for (file, layout, map) in cases {
            let ours = try read(daemon, file, ["--channels", "6", "--setting", "AVChannelLayoutKey=\(layout)"])
            #expect(ours.status == 0, "\(ours.stderr)")
            let theirs = try ffmpeg(file, map: map)
            #expect(theirs.count == 12_000 * 12)
            #expect(ours.bytes == theirs, "\(file) \(layout): the channel order differs from ffmpeg's channelmap \(map ?? "-")")
            if map != nil { #expect(ours.bytes != plain.bytes, "\(layout) reorders") }
        }
    }

    /// Non-interleaved: the planes come in the layout's order. 4.0 (L R C Cs) read as MPEG_4_0_B (C L R Cs).
    @Test func nonInterleavedPlanesFollowTheLayout() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let layout = Self.tag(116, 4)
        let args = ["--channels", "4", "--non-interleaved", "--setting", "AVChannelLayoutKey=\(layout)"]
        let ours = try read(daemon, LayoutMedia.four, args)
        #expect(ours.status == 0, "\(ours.stderr)")
        let json = try daemon.trackctl(["read", LayoutMedia.four] + args + ["--json"])
        let sizes = json.text.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["size"] as? Int
        }
        // ffmpeg's interleaved frames in the layout's order: plane c of every buffer holds channel c's samples.
        let theirs = [UInt8](try ffmpeg(LayoutMedia.four, map: "FC|FL|FR|BC"))
        let channel: [[UInt8]] = (0..<4).map { c in
            stride(from: 0, to: theirs.count, by: 8).flatMap { theirs[$0 + 2 * c..<$0 + 2 * c + 2] }
        }
        var offset = 0, frame = 0
        let bytes = [UInt8](ours.bytes)
        #expect(sizes.reduce(0, +) == bytes.count && !sizes.isEmpty)
        for size in sizes where offset + size <= bytes.count {
            let frames = size / 8
            for c in 0..<4 {
                let plane = Array(bytes[offset + c * frames * 2..<offset + (c + 1) * frames * 2])
                #expect(plane == Array(channel[c][frame * 2..<(frame + frames) * 2]), "plane \(c) at frame \(frame)")
            }
            offset += size
            frame += frames
        }
        #expect(frame == 12_000)
    }

    @Test func layoutsThatCannotBeAppliedAreRejected() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let cases: [(Int, String, String)] = [
            (2, Self.tag(104, 2), "AVChannelLayoutKey: kAudioChannelLayoutTag_MidSide (0x00680002) is not supported: mid/side needs matrixing, not a channel order"),
            (2, Self.tag(103, 2), "AVChannelLayoutKey: kAudioChannelLayoutTag_MatrixStereo (0x00670002) is not supported"),
            (6, Self.tag(190, 6), "AVChannelLayoutKey: layout tag 0x00BE0006 is not supported"),
            (2, "{\"mChannelLayoutTag\": 0, \"mChannelDescriptions\": [{\"mChannelLabel\": 1}, {\"mChannelLabel\": 38}]}",
             "AVChannelLayoutKey: channel label 38 is not supported"),
            (2, "{\"mChannelLayoutTag\": 0, \"mChannelDescriptions\": [{\"mChannelLabel\": 1}, {\"mChannelLabel\": 1}]}",
             "AVChannelLayoutKey: speaker L (label 1) appears twice in the channel descriptions"),
        ]
        for (channels, layout, message) in cases {
            let r = try daemon.trackctl(["read", LayoutMedia.back, "--channels", "\(channels)", "--setting",
                                         "AVChannelLayoutKey=\(layout)"])
            #expect(r.status == 1)
            #expect(r.stderr.contains("-11861") && r.stderr.contains(message), "\(r.stderr)")
        }
    }
}
