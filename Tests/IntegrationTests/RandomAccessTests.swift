import Foundation
import TestSupport
import Testing
import TrackClient

/// supportsRandomAccess, reset(forReadingTimeRanges:) and markConfigurationAsFinal through a real trackd, checked
/// against ffmpeg's decode of the same frames.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct RandomAccessTests {
    static let prefix = "-[AVAssetReaderOutput resetForReadingTimeRanges:] "

    func range(_ start: Double, _ end: Double) -> MediaTimeRange {
        MediaTimeRange(start: MediaTime(seconds: start), duration: MediaTime(seconds: end - start))
    }

    func drain(_ output: AssetReaderTrackOutput) throws -> [(pts: Double, md5: String)] {
        var got: [(Double, String)] = []
        while let s = try output.copyNextSampleBuffer() { got.append((s.presentationTimeStamp.seconds, md5Hex(s.packedBytes()))) }
        return got
    }

    @Test func rangesReturnTheFramesOfAFullDecode() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let oracle = try Oracle.frameMD5(Media.clip, pixFmt: "yuv420p")
        let pts = try Oracle.framePTS(Media.clip)
        try #require(oracle.count == 60 && pts.count == 60)
        /// The frames a range shows: the one displayed at its start, through the last starting before its end.
        func expected(_ start: Double, _ end: Double) -> [(pts: Double, md5: String)] {
            zip(pts, oracle).filter { $0.0 + 1.0 / 30 > start + 0.0001 && $0.0 < end - 0.0001 }.map { ($0.0, $0.1.md5) }
        }
        func check(_ got: [(pts: Double, md5: String)], _ want: [(pts: Double, md5: String)], _ what: String,
                   sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(got.count == want.count, "\(what): \(got.map(\.pts)) vs \(want.map(\.pts))", sourceLocation: sourceLocation)
            for (g, w) in zip(got, want) {
                #expect(abs(g.pts - w.pts) < 0.0005, "\(what): pts \(g.pts) vs \(w.pts)", sourceLocation: sourceLocation)
                #expect(g.md5 == w.md5, "\(what): frame at \(w.pts) differs from ffmpeg's", sourceLocation: sourceLocation)
            }
        }

        let output = try AssetReaderTrackOutput(track: track, outputSettings: ["PixelFormatType": .string("y420")])
        try output.setSupportsRandomAccess(true)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        try reader.setTimeRange(range(0.2, 0.4))
        usage(.internalInconsistency, Self.prefix + "cannot be called before reading has started") {
            try output.reset(forReadingTimeRanges: [range(0, 1)])
        }
        #expect(try reader.startReading())
        let first = try #require(try output.copyNextSampleBuffer())
        usage(.internalInconsistency, Self.prefix + "cannot be called until all samples have been read (i.e. copyNextSampleBuffer returns NULL)") {
            try output.reset(forReadingTimeRanges: [range(0, 1)])
        }
        var initial = [(first.presentationTimeStamp.seconds, md5Hex(first.packedBytes()))]
        initial += try drain(output)
        check(initial, expected(0.2, 0.4), "reader.timeRange")
        #expect(reader.status == .reading, "a random-access output completes the reader only once marked final")

        // The Apple argument checks come first, in order.
        usage(.invalidArgument, Self.prefix + "time range 0 has a start that is not numeric") {
            try output.reset(forReadingTimeRanges: [MediaTimeRange(start: .invalid, duration: MediaTime(seconds: 1))])
        }
        usage(.invalidArgument, Self.prefix + "time range 1 has a negative or non-numeric duration") {
            try output.reset(forReadingTimeRanges: [range(0, 1), MediaTimeRange(start: MediaTime(seconds: 1), duration: MediaTime(seconds: -1))])
        }
        usage(.invalidArgument, Self.prefix + "time ranges must be in ascending order and must not overlap (time range 1 starts before time range 0 ends)") {
            try output.reset(forReadingTimeRanges: [range(0.5, 1), range(0.9, 1.2)])
        }

        // 1.21 s lies between the keyframes at 1.0 and 1.5 s (GOP 15); 0.5–0.7 and 0.7–0.8 touch.
        try output.reset(forReadingTimeRanges: [range(0.5, 0.7), range(0.7, 0.8), range(1.21, 1.45)])
        check(try drain(output), expected(0.5, 0.7) + expected(0.7, 0.8) + expected(1.21, 1.45), "three ranges")
        #expect(reader.status == .reading)

        // Backwards, and to the end.
        try output.reset(forReadingTimeRanges: [range(0.1, 0.15), MediaTimeRange(start: MediaTime(seconds: 1.9), duration: .positiveInfinity)])
        check(try drain(output), expected(0.1, 0.15) + expected(1.9, 10), "backwards and to the end")

        output.markConfigurationAsFinal()
        #expect(reader.status == .completed)
        usage(.internalInconsistency, Self.prefix + "cannot be called after calling markConfigurationAsFinal") {
            try output.reset(forReadingTimeRanges: [range(0, 1)])
        }
        #expect(try output.copyNextSampleBuffer() == nil)
    }

    @Test func finalBeforeTheEndCompletesAtTheEnd() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: [:])
        try output.setSupportsRandomAccess(true)
        let plain = try AssetReaderTrackOutput(track: try #require(asset.tracks(withMediaType: .audio).first), outputSettings: [:])
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        try reader.add(plain)
        try reader.setTimeRange(range(0, 0.5))
        #expect(try reader.startReading())
        _ = try #require(try output.copyNextSampleBuffer())
        output.markConfigurationAsFinal()
        var n = 1
        while try output.copyNextSampleBuffer() != nil { n += 1 }
        #expect(n == 15)
        #expect(reader.status == .reading, "the audio output has not returned nil yet")
        usage(.internalInconsistency, Self.prefix + "cannot be called after calling markConfigurationAsFinal") {
            try output.reset(forReadingTimeRanges: [range(0, 1)])
        }
        usage(.internalInconsistency, Self.prefix + "cannot be called until all samples have been read (i.e. copyNextSampleBuffer returns NULL)") {
            try plain.reset(forReadingTimeRanges: [range(0, 1)])
        }
        while try plain.copyNextSampleBuffer() != nil {}
        usage(.internalInconsistency, Self.prefix + "cannot be called without setting supportsRandomAccess to YES") {
            try plain.reset(forReadingTimeRanges: [range(0, 1)])
        }
        #expect(reader.status == .completed)
    }

    /// Sample attachments: the first decoded frame of the read and of each range after a reset is a
    /// discontinuity, no other is; decoded frames depend on no others. Passthrough: DependsOnOthers is the
    /// complement of the stored key-frame flag (ffprobe), and only non-sync samples can be marked droppable.
    @Test func attachments() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: [:])
        try output.setSupportsRandomAccess(true)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        try reader.setTimeRange(range(0.2, 0.4))
        #expect(try reader.startReading())
        func flags() throws -> [Bool] {
            var d: [Bool] = []
            while let s = try output.copyNextSampleBuffer() {
                #expect(!s.dependsOnOthers && s.isDependedOnByOthers == nil)
                d.append(s.isDiscontinuity)
            }
            return d
        }
        let first = try flags()
        #expect(first.first == true && first.dropFirst().allSatisfy { !$0 } && first.count == 6, "\(first)")
        try output.reset(forReadingTimeRanges: [range(0.5, 0.7), range(1.21, 1.4)])
        let two = try flags()
        #expect(two == [true] + Array(repeating: false, count: 5) + [true] + Array(repeating: false, count: 5), "\(two)")
        output.markConfigurationAsFinal()
        #expect(reader.status == .completed)

        let passthrough = try AssetReaderTrackOutput(track: track, outputSettings: nil)
        let stored = AssetReader(asset: asset)
        try stored.add(passthrough)
        #expect(try stored.startReading())
        var got: [(depends: Bool, dependedOn: Bool?)] = []
        while let s = try passthrough.copyNextSampleBuffer() { got.append((s.dependsOnOthers, s.isDependedOnByOthers)) }
        let packets = try Oracle.packets(Media.clip)
        #expect(got.count == packets.count)
        for (g, p) in zip(got, packets) {
            #expect(g.depends == !p.key)
            #expect(g.dependedOn == nil || (g.dependedOn == false && !p.key))
        }
    }
}
