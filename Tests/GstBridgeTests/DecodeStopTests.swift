import Foundation
import GstBridge
import MediaIndex
import TrackdProtocol
import TestSupport
import Testing

/// ReadFrames decodes each planned range from its GOP's sync sample to the last sample its wanted frames need, and
/// no further: the decoder is handed exactly those samples, and the wanted frames are the ones a full decode gives.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct DecodeStopTests {
    static let i420 = VideoOutputRequest(pixelFormat: PixelFormat.named("y420")!)

    /// Samples (decode order) from the sync sample at or before `frame`'s to the last one the frames need.
    static func needed(_ index: FrameIndex, _ frames: [Int]) -> Int {
        let last = frames.map { index.frames[$0].decodePosition }.max()!
        let first = index.frames.filter { $0.isSync && $0.decodePosition <= frames.map { index.frames[$0].decodePosition }.min()! }
            .map(\.decodePosition).max()!
        return last - first + 1
    }

    /// Pulls one range to its end; the samples whose PTS is a wanted frame's.
    static func pullRange(_ pipeline: TrackPipeline, _ index: FrameIndex, wanted: Set<Int>) throws -> [Int: [UInt8]] {
        var got: [Int: [UInt8]] = [:]
        for sample in try pullAll(pipeline) {
            let frame = index.nearest(try #require(sample.presentationTime.nanoseconds))
            if wanted.contains(frame) { got[frame] = sample.tightBytes }
        }
        return got
    }

    @Test func rangesEndAtTheLastNeededSample() throws {
        let path = try Fixtures.clip()  // 60 frames, GOP 15, two B-frames
        let expected = try ffmpegFrameMD5(path, pixFmt: "yuv420p")
        let index = try FrameIndex.build(source: try Fixtures.source(path), trackID: 1)
        #expect(index.frames.count == 60)
        // Early in the second GOP, then early in the fourth: each needs a few samples of a 15-sample GOP. Planned
        // as two seeks (maxSkip 0), the way GOPs far apart are.
        let plan = index.plan([17, 47], maxSkip: 0)
        #expect(plan.count == 2)
        let pipeline = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .decode(Self.i420),
                                         timeRange: plan[0].range, lastNeededSample: plan[0].lastNeededSample)
        var frames = try Self.pullRange(pipeline, index, wanted: [17])
        let before = pipeline.samplesDecoded
        try pipeline.seek(to: plan[1].range, lastNeededSample: plan[1].lastNeededSample)
        frames.merge(try Self.pullRange(pipeline, index, wanted: [47])) { a, _ in a }
        pipeline.stop()
        // The second range is decoded from a flush: exactly its samples reach the decoder.
        #expect(pipeline.samplesDecoded - before == UInt64(Self.needed(index, [47])))
        #expect(Self.needed(index, [47]) < 15)
        for frame in [17, 47] {
            var md5 = MD5()
            md5.update(try #require(frames[frame], "frame \(frame) was not decoded"))
            #expect(md5.finish() == expected[frame].md5, "frame \(frame)")
        }

        // Without it, qtdemux 1.22 (whose end-of-segment check waits for a key frame) feeds the decoder the rest
        // of the GOP after the range's stop — what DecodeStop saves.
        let plain = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .decode(Self.i420),
                                      timeRange: plan[0].range)
        _ = try Self.pullRange(plain, index, wanted: [17])
        let plainBefore = plain.samplesDecoded
        try plain.seek(to: plan[1].range)
        let plainFrames = try Self.pullRange(plain, index, wanted: [47])
        plain.stop()
        #expect(plainFrames[47] != nil)
        #expect(plain.samplesDecoded - plainBefore > UInt64(Self.needed(index, [47])))
    }

    /// Runs of needed samples close together are decoded in one pass from the start, without a seek: every other
    /// sample is dropped before the decoder, which gets exactly the runs, and the frames are a full decode's.
    @Test func closeRunsAreDecodedInOnePass() throws {
        let path = try Fixtures.clip()
        let expected = try ffmpegFrameMD5(path, pixFmt: "yuv420p")
        let index = try FrameIndex.build(source: try Fixtures.source(path), trackID: 1)
        let wanted: Set<Int> = [17, 47, 50]
        let plan = index.plan(wanted)
        #expect(plan.count == 1)
        let range = try #require(plan.first)
        let needed = Self.needed(index, [17]) + Self.needed(index, [47, 50])
        #expect(range.neededSamples?.count == needed)
        let pipeline = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .decode(Self.i420),
                                         timeRange: .everything, neededSamples: range.neededSamples,
                                         lastNeededSample: range.lastNeededSample)
        let frames = try Self.pullRange(pipeline, index, wanted: wanted)
        pipeline.stop()
        #expect(pipeline.samplesDecoded == UInt64(needed))
        #expect(pipeline.samplesSkipped >= 15)  // the GOPs between, at least
        for frame in wanted.sorted() {
            var md5 = MD5()
            md5.update(try #require(frames[frame], "frame \(frame) was not decoded"))
            #expect(md5.finish() == expected[frame].md5, "frame \(frame)")
        }
    }

    /// A frame that is the last of its GOP in decode order needs the whole GOP; one whose presentation precedes
    /// later-decoded samples (a B-frame) needs the sample it is predicted from, decoded before it.
    @Test func bFramesGetTheSamplesTheyReference() throws {
        let path = try Fixtures.clip()
        let expected = try ffmpegFrameMD5(path, pixFmt: "yuv420p")
        let index = try FrameIndex.build(source: try Fixtures.source(path), trackID: 1)
        // Frames of the third GOP in display order, each alone: B-frames come after the P-frame they precede.
        for frame in 30..<36 {
            let plan = index.plan([frame])
            let pipeline = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .decode(Self.i420),
                                             timeRange: plan[0].range, lastNeededSample: plan[0].lastNeededSample)
            let got = try Self.pullRange(pipeline, index, wanted: [frame])
            pipeline.stop()
            var md5 = MD5()
            md5.update(try #require(got[frame], "frame \(frame) was not decoded"))
            #expect(md5.finish() == expected[frame].md5, "frame \(frame)")
        }
    }

    /// With the frames a range delivers known (a FrameSelection), an H.264 picture no other picture refers to
    /// (every slice's nal_ref_idc 0: here x264's non-reference B-frames) is not handed to the decoder unless it is
    /// delivered: each frame of a GOP, asked for alone, is still exactly a full decode's, with fewer samples decoded.
    @Test func unreferencedPicturesThatAreNotDeliveredAreNotDecoded() throws {
        let path = try Fixtures.clip()
        let expected = try ffmpegFrameMD5(path, pixFmt: "yuv420p")
        let index = try FrameIndex.build(source: try Fixtures.source(path), trackID: 1)
        var saved = 0
        for frame in 30..<45 {
            let plan = index.plan([frame])
            for selection in [nil, FrameSelection(index: index, frames: [frame])] {
                let pipeline = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .decode(Self.i420),
                                                 timeRange: plan[0].range, lastNeededSample: plan[0].lastNeededSample,
                                                 selection: selection)
                let got = try Self.pullRange(pipeline, index, wanted: [frame])
                pipeline.stop()
                var md5 = MD5()
                md5.update(try #require(got[frame], "frame \(frame) was not decoded"))
                #expect(md5.finish() == expected[frame].md5, "frame \(frame), selection \(selection != nil)")
                // No sample is "not needed" in a single range (lastNeededSample only): what is skipped here is
                // the unreferenced pictures, and only with a selection.
                if selection == nil { #expect(pipeline.samplesSkipped == 0) } else { saved += Int(pipeline.samplesSkipped) }
            }
        }
        // x264 with two B-frames and its default B-pyramid: one B-frame in each pair is referenced by none.
        #expect(saved >= 15, "samples not decoded over the GOP's 15 single-frame reads: \(saved)")
    }
}
