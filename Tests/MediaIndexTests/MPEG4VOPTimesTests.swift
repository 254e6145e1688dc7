import Foundation
import MediaIndex
import TestSupport
import Testing

/// An MPEG-4 Part 2 elementary stream's times from its headers (MPEG4VOPTimes), against ffprobe's frame times.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct MPEG4VOPTimesTests {
    static let source = ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=2"]
    static let even = Media.make("vop-times.m4v", source + ["-c:v", "mpeg4", "-bf", "2", "-g", "12", "-f", "m4v"])
    /// Frame 5 dropped: the VOPs keep their times, one gap of two frames.
    static let gap = Media.make("vop-times-gap.m4v", source + ["-vf", "select='not(eq(n\\,5))'", "-fps_mode", "vfr",
                                                               "-c:v", "mpeg4", "-bf", "2", "-g", "12", "-f", "m4v"])
    /// 30000/1001 fps: resolution 30000, VOPs 1001 ticks apart.
    static let ntsc = Media.make("vop-times-ntsc.m4v", ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30000/1001:duration=2",
                                                        "-c:v", "mpeg4", "-bf", "2", "-g", "12", "-f", "m4v"])

    /// The stream's samples as its parser cuts them: each begins at the start code after a VOP's (the headers before
    /// a VOP — VOL, GOV — belong to its sample).
    static func samples(_ bytes: [UInt8]) -> [[UInt8]] {
        var starts = [0], afterVOP = false
        for i in 0..<max(0, bytes.count - 3) where bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1 {
            if afterVOP, i > 0 { starts.append(i) }
            afterVOP = bytes[i + 3] == 0xB6
        }
        return zip(starts, starts.dropFirst() + [bytes.count]).map { Array(bytes[$0..<$1]) }
    }

    /// Every VOP's time, read in decode order, is one of ffprobe's frame times (its time_base converted to the VOL's
    /// resolution); the frame is the tick count they are apart (ffmpeg's encoder, no fixed_vop_rate: one tick of 30
    /// at 30 fps, 1001 of 30000 at 30000/1001 fps), none with a gap (not evenly spaced).
    @Test(arguments: [(even, 30 as Int64, 1 as Int64?, 33_333_333 as Int64?), (gap, 30, nil, nil), (ntsc, 30000, 1001, 33_366_666)])
    func vopTimesAreFfprobes(file: String, resolution want: Int64, ticks: Int64?, nanoseconds: Int64?) throws {
        var times = MPEG4VOPTimes()
        let samples = Self.samples(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        var read = 0
        for sample in samples where times.see(sample) { read += 1 }
        #expect(read == samples.count, "\(file): \(samples.count - read) samples without a VOP")
        let resolution = Int64(try #require(times.resolution))
        let frames = try Probe.frames(file, "v:0")
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=time_base", "-of", "csv=p=0", file])
        let base = r.text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "/").compactMap { Int64($0) }
        try #require(base.count == 2 && base[0] > 0, "ffprobe: \(r.text)")
        let expected = try frames.map { try #require($0.pts) * base[0] * resolution / base[1] }
        #expect(times.times.count == samples.count && times.times.sorted() == expected.sorted(), "\(file): \(times.times)")
        #expect(resolution == want && times.fixedIncrement == nil)
        #expect(times.frameTicks == ticks && times.frameNanoseconds == nanoseconds, "\(file): \(String(describing: times.frameTicks))")
        // Where there is a frame, every VOP is a whole number of frames after the first, as ffprobe's r_frame_rate.
        if let ticks, let first = expected.min() { #expect(expected.allSatisfy { ($0 - first) % ticks == 0 }) }
    }

    /// A VOL with fixed_vop_rate: its fixed_vop_time_increment (15 bits for resolution 30000) is the frame, whatever
    /// the VOPs say.
    /// `value` in `width` bits, as a string of 0s and 1s.
    static func bin(_ value: Int, _ width: Int) -> String {
        let digits = String(value, radix: 2)
        return String(repeating: "0", count: width - digits.count) + digits
    }

    /// A string of 0s and 1s as bytes, the last one padded with 1s.
    static func bytes(_ bits: String) -> [UInt8] {
        let padded = Array((bits + String(repeating: "1", count: (8 - bits.count % 8) % 8)).utf8)
        return stride(from: 0, to: padded.count, by: 8).map { i in
            padded[i..<i + 8].reduce(UInt8(0)) { $0 << 1 | ($1 == UInt8(ascii: "1") ? 1 : 0) }
        }
    }

    /// A VOL header of `resolution` ticks a second, with fixed_vop_rate and `fixed` as its increment when given.
    static func vol(_ resolution: Int, fixed: (increment: Int, bits: Int)? = nil) -> [UInt8] {
        let rate = fixed.map { "1" + bin($0.increment, $0.bits) } ?? "0"
        return [0, 0, 1, 0x20] + bytes("0" + bin(1, 8) + "0" + "0001" + "0" + "00" + "1" + bin(resolution, 16) + "1" + rate + "1")
    }

    /// A VOP of `type` whose modulo_time_base adds `seconds`, at `increment` of `bits` bits.
    static func vop(type: Int, seconds: Int, increment: Int, bits: Int) -> [UInt8] {
        [0, 0, 1, 0xB6] + bytes(bin(type, 2) + String(repeating: "1", count: seconds) + "0" + "1" + bin(increment, bits) + "1")
    }

    /// A VOL with fixed_vop_rate: its fixed_vop_time_increment (15 bits for resolution 30000) is the frame, whatever
    /// the VOPs say.
    @Test func fixedRate() {
        var times = MPEG4VOPTimes()
        let read = times.see(Self.vol(30000, fixed: (1001, 15)) + Self.vop(type: 0, seconds: 0, increment: 0, bits: 15))
        #expect(read)
        #expect(times.resolution == 30000 && times.fixedIncrement == 1001 && times.times == [0])
        #expect(times.frameTicks == 1001 && times.frameNanoseconds == 33_366_666)
    }

    /// Two VOPs 150 000 s apart at 65 535 ticks a second: a step of 9.8 × 10⁹ ticks, whose nanoseconds do not fit in
    /// 64 bits — no frame duration (a hostile stream is no trap).
    @Test func aStepPastInt64IsNoDuration() {
        var times = MPEG4VOPTimes()
        let first = times.see(Self.vol(65535) + Self.vop(type: 0, seconds: 0, increment: 0, bits: 16))
        let second = times.see(Self.vop(type: 0, seconds: 150_000, increment: 0, bits: 16))
        #expect(first && second)
        #expect(times.frameTicks == Int64(150_000) * 65535, "\(times.times)")
        #expect(times.frameNanoseconds == nil)
    }
}
