import Foundation
import GstBridge
import TrackdProtocol
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ImageTests {
    /// A time between two frames gives the earlier frame exactly (not the keyframe), as PNG.
    @Test func exactFrameBetweenTwoFrames() throws {
        let path = try Fixtures.clip()
        // 0.51 s lies between frame 15 (0.5 s) and frame 16 (0.5333 s); the GOP is 15, so frame 15 is a keyframe,
        // use 0.61 (frame 18, not a keyframe) as well.
        for (time, frame) in [(0.51, 15), (0.61, 18), (0.0, 0), (1.99, 59)] {
            let source = try Fixtures.source(path)
            let image = try generatePNG(source: source, trackID: 1, at: MediaTime(seconds: time))
            #expect(image.png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
            #expect(image.width == 320 && image.height == 240)
            #expect(abs(image.actualTime.seconds - Double(frame) / 30) < 0.000_001, "at \(time): \(image.actualTime)")

            // Decode the PNG with ffmpeg and compare with ffmpeg's own RGB frames around it.
            let pngPath = Fixtures.directory.appendingPathComponent("frame-\(frame).png").path
            #expect(FileManager.default.createFile(atPath: pngPath, contents: Data(image.png)))
            let ours = [UInt8](try Fixtures.run("ffmpeg", ["-nostdin", "-v", "error", "-i", pngPath, "-f", "rawvideo",
                                                           "-pix_fmt", "rgb24", "-"]))
            #expect(ours.count == 320 * 240 * 3)
            let all = [UInt8](try ffmpegRawFrames(path, pixFmt: "rgb24"))
            let frameSize = 320 * 240 * 3
            func distance(_ i: Int) -> Double {
                guard i >= 0, (i + 1) * frameSize <= all.count else { return .infinity }
                var sum = 0
                for j in 0..<frameSize { sum += abs(Int(all[i * frameSize + j]) - Int(ours[j])) }
                return Double(sum) / Double(frameSize)
            }
            let d = (frame - 1...frame + 1).map(distance)
            #expect(d[1] < 3, "mean abs difference to frame \(frame): \(d)")
            #expect(d[1] < d[0] && d[1] < d[2], "frame \(frame) is the closest: \(d)")
        }
    }

    @Test func pastTheEndGivesTheLastFrame() throws {
        let image = try generatePNG(source: try Fixtures.source(try Fixtures.clip()), trackID: 1,
                                    at: MediaTime(seconds: 10))
        #expect(abs(image.actualTime.seconds - 59.0 / 30) < 0.000_001, "\(image.actualTime)")
    }
}
