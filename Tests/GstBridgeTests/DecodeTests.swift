import Foundation
import GstBridge
import TrackdProtocol
import Synchronization
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct DecodeTests {
    static let i420 = VideoOutputRequest(pixelFormat: PixelFormat.named("y420")!)

    /// Every decoded I420 frame, tightly packed, has ffmpeg's md5 and PTS — for moov-at-end and faststart files.
    @Test(arguments: ["clip", "faststart"])
    func i420FramesMatchFFmpeg(_ which: String) throws {
        let path = which == "clip" ? try Fixtures.clip() : try Fixtures.faststart()
        let expected = try ffmpegFrameMD5(path, pixFmt: "yuv420p")
        #expect(expected.count == 60)
        let pipeline = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .decode(Self.i420),
                                         timeRange: .everything)
        #expect(pipeline.outputFormat.format == "y420")
        #expect(pipeline.outputFormat.width == 320 && pipeline.outputFormat.height == 240)
        let samples = try pullAll(pipeline)
        #expect(samples.count == expected.count)
        for (i, (sample, frame)) in zip(samples, expected).enumerated() {
            var md5 = MD5()
            md5.update(sample.tightBytes)
            #expect(md5.finish() == frame.md5, "frame \(i)")
            #expect(abs(sample.presentationTime.seconds - frame.pts) < 0.000_001, "frame \(i) pts")
        }
        let first = try #require(samples.first)
        #expect(first.format == "y420")
        #expect(first.width == 320 && first.height == 240)
        #expect(first.planes.count == 3)
        #expect(first.planes[0].rowBytes == 320 && first.planes[0].height == 240)
        #expect(first.planes[1].rowBytes == 160 && first.planes[1].height == 120)
        #expect(first.isSync)
        #expect(abs(first.duration.seconds - 1.0 / 30) < 0.0001)
        #expect(first.presentationTime.timescale == MediaTime.nanosecondTimescale)
    }

    /// 420v (NV12 made from the decoder's I420 in the frame's memfd: the Y plane where the decoder wrote it, the
    /// CbCr plane after the decoder's data) matches ffmpeg's nv12 frames exactly, and so does a copy of it.
    @Test func nv12FramesMatchFFmpeg() throws {
        let path = try Fixtures.clip()
        let expected = try ffmpegFrameMD5(path, pixFmt: "nv12")
        let request = VideoOutputRequest(pixelFormat: PixelFormat.named("420v")!)
        let pipeline = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .decode(request),
                                         timeRange: .everything)
        let samples = try pullAll(pipeline)
        #expect(samples.count == expected.count)
        var shared = 0
        for (i, (sample, frame)) in zip(samples, expected).enumerated() {
            #expect(sample.planes.count == 2)
            #expect(sample.planes.first == PlaneLayout(offset: 0, bytesPerRow: 320, rowBytes: 320, height: 240))
            let chroma = try #require(sample.planes.last)
            if sample.shared != nil {
                #expect(chroma.offset >= 320 * 240 * 3 / 2 && chroma.rowBytes == 320 && chroma.height == 120)
                #expect(sample.size == Int(chroma.offset) + Int(chroma.bytesPerRow) * 119 + 320)
                shared += 1
            } else {
                // Holding every frame, this test goes past the allocator's 32 live memfds: the rest are in system
                // memory and written as tight NV12.
                #expect(chroma == PlaneLayout(offset: 320 * 240, bytesPerRow: 320, rowBytes: 320, height: 120))
                #expect(sample.size == 320 * 240 * 3 / 2)
            }
            var md5 = MD5()
            md5.update(sample.tightBytes)
            #expect(md5.finish() == frame.md5, "frame \(i)")
            #expect(sample.colorimetry.range == 1)
        }
        #expect(shared >= 16, "\(shared) of \(samples.count) frames were in shared memory")
    }

    /// A full-range source read as 420v comes out limited (and flagged so); as 420f it is untouched.
    @Test func fullRangeSourceTo420vIsLimited() throws {
        let path = try Fixtures.fullRange()
        /// Luma planes (tight) of every frame, and the first frame's range code.
        func luma(_ code: FourCC) throws -> (planes: [[UInt8]], range: UInt8) {
            let request = VideoOutputRequest(pixelFormat: PixelFormat.named(code)!)
            let pipeline = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .decode(request),
                                             timeRange: .everything)
            let samples = try pullAll(pipeline)
            #expect(samples.count == 10)
            return (samples.map { s in
                let bytes = s.bytes
                let y = s.planes[0]
                return (0..<Int(y.height)).flatMap { row in
                    bytes[Int(y.offset) + row * Int(y.bytesPerRow)..<Int(y.offset) + row * Int(y.bytesPerRow) + Int(y.rowBytes)]
                }
            }, samples.first?.colorimetry.range ?? 0)
        }
        let decoded = try luma("y420")  // no range conversion: the decoder's values
        #expect(decoded.range == 2, "GStreamer sees the source as full range")
        let all = decoded.planes.flatMap { $0 }
        #expect(all.min()! < 16 && all.max()! > 235, "the source uses the full range")

        let full = try luma("420f")
        #expect(full.range == 2)
        #expect(full.planes == decoded.planes, "420f luma equals the decoder's")

        let video = try luma("420v")
        #expect(video.range == 1)
        let converted = video.planes.flatMap { $0 }
        #expect(converted.min()! >= 16 && converted.max()! <= 235, "420v luma \(converted.min()!)...\(converted.max()!)")
        let expected = all.map { UInt8((16.0 + Double($0) * 219.0 / 255.0).rounded()) }
        #expect(converted == expected, "420v luma is the full-range luma scaled to 16...235")
    }

    /// A limited-range source read as 420f is expanded to full range.
    @Test func limitedSourceTo420fIsFull() throws {
        let request = VideoOutputRequest(pixelFormat: PixelFormat.named("420f")!)
        let pipeline = try TrackPipeline(source: try Fixtures.source(try Fixtures.clip()), trackID: 1,
                                         mode: .decode(request), timeRange: .everything)
        guard case .sample(let s) = pipeline.pull(timeoutNs: 5_000_000_000) else {
            Issue.record("no sample")
            return
        }
        #expect(s.colorimetry.range == 2)
        #expect(s.colorimetry.matrix == 1 || s.colorimetry.matrix == 6, "matrix \(s.colorimetry.matrix)")
        pipeline.stop()
    }

    /// Every pixel format of the table decodes, with planes that fit the buffer.
    @Test(arguments: PixelFormat.all.map(\.code))
    func everyPixelFormat(_ code: FourCC) throws {
        let format = PixelFormat.named(code)!
        let pipeline = try TrackPipeline(source: try Fixtures.source(try Fixtures.clip()), trackID: 1,
                                         mode: .decode(VideoOutputRequest(pixelFormat: format)),
                                         timeRange: .everything)
        guard case .sample(let s) = pipeline.pull(timeoutNs: 5_000_000_000) else {
            Issue.record("no sample for \(code)")
            return
        }
        #expect(s.format == code)
        #expect(s.planes.count == format.planeCount)
        for p in s.planes {
            #expect(p.rowBytes <= p.bytesPerRow)
            #expect(Int(p.offset) + Int(p.bytesPerRow) * Int(p.height) <= s.size)
        }
        // Plane 0's visible bytes per row of a 320-pixel frame; v210 rows are 128 bytes per 48 pixels.
        let rowBytes: [FourCC: UInt32] = [
            "BGRA": 1280, "RGBA": 1280, FourCC(rawValue: 0x20): 1280, "y408": 1280, "2vuy": 640, "yuvs": 640,
            "L016": 640, "x420": 640, "xf20": 640, "v216": 1280, "y416": 2560, "b64a": 2560, "l64r": 2560,
            "v210": (320 + 47) / 48 * 128, FourCC(rawValue: 0x18): 960, "24BG": 960,
        ]
        #expect(s.planes[0].rowBytes == rowBytes[code] ?? 320)
    }

    /// Width/height in the request scale the output.
    @Test func scaledOutput() throws {
        let request = VideoOutputRequest(pixelFormat: PixelFormat.named("BGRA")!, width: 160, height: 90)
        let pipeline = try TrackPipeline(source: try Fixtures.source(try Fixtures.clip()), trackID: 1,
                                         mode: .decode(request), timeRange: .everything)
        #expect(pipeline.outputFormat.width == 160 && pipeline.outputFormat.height == 90)
        let samples = try pullAll(pipeline)
        #expect(samples.count == 60)
        #expect(samples.first?.width == 160 && samples.first?.height == 90)
        #expect(samples.first?.planes.first?.rowBytes == 640)
    }

    /// A time range: the first frame is the one displayed at the start, nothing at or after the end.
    @Test func timeRange() throws {
        let range = MediaTimeRange(start: MediaTime(seconds: 1.01), duration: MediaTime(seconds: 0.5))
        let pipeline = try TrackPipeline(source: try Fixtures.source(try Fixtures.clip()), trackID: 1,
                                         mode: .decode(Self.i420), timeRange: range)
        let samples = try pullAll(pipeline)
        let times = samples.map(\.presentationTime.seconds)
        #expect(abs((times.first ?? -1) - 1.0) < 0.0001, "\(times)")
        #expect((times.last ?? 99) < 1.51)
        #expect(samples.count == 16, "\(times)")
        // Frames match ffmpeg's frames 30…45.
        let expected = try ffmpegFrameMD5(try Fixtures.clip(), pixFmt: "yuv420p")
        for (sample, frame) in zip(samples, expected[30...]) {
            var md5 = MD5()
            md5.update(sample.tightBytes)
            #expect(md5.finish() == frame.md5)
        }
    }

    /// Several pipelines read one fd at once (pread: no shared offset).
    @Test func concurrentPipelinesOnOneSource() throws {
        let source = try Fixtures.source(try Fixtures.clip())
        let a = try TrackPipeline(source: source, trackID: 1, mode: .decode(Self.i420), timeRange: .everything)
        let b = try TrackPipeline(source: source, trackID: 2, mode: .passthrough, timeRange: .everything)
        let c = try TrackPipeline(source: source, trackID: 1, mode: .passthrough, timeRange: .everything)
        _ = try source.discover()
        #expect(try pullAll(a).count == 60)
        #expect(try pullAll(b).count > 90)
        #expect(try pullAll(c).count == 60)
    }

    /// stop() from another thread ends a pull loop; pull after stop says end of stream; stop is idempotent.
    @Test func stopFromAnotherThread() throws {
        let pipeline = try TrackPipeline(source: try Fixtures.source(try Fixtures.clip()), trackID: 1,
                                         mode: .decode(Self.i420), timeRange: .everything)
        // (samples pulled, the loop ended)
        let progress = Mutex<(count: Int, ended: Bool)>((0, false))
        let stopped = Atomic<Bool>(false)
        let thread = Thread {
            loop: while true {
                switch pipeline.pull(timeoutNs: 50_000_000) {
                case .sample:
                    progress.withLock { $0.count += 1 }
                    // The consumer pulls on only once stop() has been called: the stop comes mid-stream on any
                    // machine (a timed pause let a loaded machine's test thread reach stop() after the 60th frame).
                    _ = waitUntil(timeout: .seconds(30)) { stopped.load(ordering: .acquiring) }
                case .timeout: continue
                case .endOfStream, .failed: break loop
                }
            }
            progress.withLock { $0.ended = true }
        }
        thread.start()
        // Stopped mid-stream: after the first sample, while the loop is running.
        #expect(waitUntil(timeout: .seconds(10)) { progress.withLock { $0.count > 0 } })
        pipeline.stop()
        stopped.store(true, ordering: .releasing)
        pipeline.stop()
        #expect(waitUntil(timeout: .seconds(5)) { progress.withLock { $0.ended } })
        #expect(progress.withLock { $0.count } < 60)
        if case .endOfStream = pipeline.pull(timeoutNs: 1_000_000) {} else { Issue.record("pull after stop") }
    }
}

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct PassthroughTests {
    @Test func samplesInDecodeOrderWithConfig() throws {
        let path = try Fixtures.clip()
        let pipeline = try TrackPipeline(source: try Fixtures.source(path), trackID: 1, mode: .passthrough,
                                         timeRange: .everything)
        #expect(pipeline.outputFormat.format == "avc1")
        #expect(pipeline.outputFormat.width == 320)
        #expect(!pipeline.outputFormat.codecConfig.isEmpty)
        #expect(pipeline.outputFormat.codecConfig.first == 1)  // avcC configurationVersion
        let samples = try pullAll(pipeline)
        #expect(samples.count == 60)
        #expect(samples.first?.isSync == true)
        #expect(samples.filter(\.isSync).count == 4)  // GOP 15
        let dts = samples.map(\.decodeTime.seconds)
        #expect(zip(dts, dts.dropFirst()).allSatisfy { $0 < $1 })
        let pts = samples.map(\.presentationTime.seconds)
        #expect(pts != pts.sorted())  // B-frames: decode order is not presentation order
        #expect(abs((pts.min() ?? -1) - 0) < 0.0001)
        #expect(samples.allSatisfy { $0.planes == [PlaneLayout(offset: 0, bytesPerRow: UInt32($0.size), rowBytes: UInt32($0.size), height: 1)] })
        #expect(samples.allSatisfy { $0.format == "avc1" })

        let audio = try TrackPipeline(source: try Fixtures.source(path), trackID: 2, mode: .passthrough,
                                      timeRange: .everything)
        #expect(audio.outputFormat.format == "mp4a")
        #expect(!audio.outputFormat.codecConfig.isEmpty)
        let audioCount = try pullAll(audio).count
        // 95 AAC packets in the file; qtdemux drops the ones wholly outside the edit list (priming, tail).
        #expect(audioCount >= 93, "\(audioCount) AAC frames")
    }
}
