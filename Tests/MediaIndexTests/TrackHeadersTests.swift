import Foundation
import MediaIndex
import TestSupport
import Testing
import MediaVocabulary

/// TrackHeaders' display matrices on ffmpeg-made MP4s (stream-copied with a `rotate` tag, which ffmpeg writes into
/// the tkhd matrix), compared with ffprobe's `displaymatrix` side data. Needs ffmpeg, no GStreamer and no daemon.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct TrackHeadersTests {
    /// ffprobe's display matrix of the first video stream (nine numbers, tkhd order), the identity when it prints none.
    static func ffprobeMatrix(_ file: String) throws -> [Int32] {
        let r = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_streams", file])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        // "displaymatrix=" then three lines "0000000k:  n  n  n".
        let lines = r.text.split(separator: "\n")
        guard let at = lines.firstIndex(where: { $0.hasPrefix("displaymatrix=") }) else { return DisplayMatrix.identity.values }
        return lines[(at + 1)...(at + 3)].flatMap { $0.split(separator: " ").dropFirst().compactMap { Int32($0) } }
    }

    static func matrices(_ file: String) throws -> [UInt32: DisplayMatrix] {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        return TrackHeaders.displayMatrices(fd: fd)
    }

    @Test(arguments: [0, 90, 180, 270])
    func theTkhdMatrixIsFfprobes(_ rotate: Int) throws {
        let file = Media.dir + "/rotate-\(rotate).mp4"
        let r = try run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-i", Media.faststart, "-c", "copy",
                                   "-metadata:s:v", "rotate=\(rotate)", file])
        try #require(r.status == 0, "ffmpeg: \(r.stderr)")
        let expected = try Self.ffprobeMatrix(file)
        #expect(expected.count == 9)
        #expect(try Self.matrices(file)[1]?.values == expected, "rotate=\(rotate)")
        if rotate != 0 { #expect(expected != DisplayMatrix.identity.values, "ffmpeg wrote no matrix for rotate=\(rotate)") }
    }

    /// ffmpeg's matrix for a tag of `rotate` degrees is the clockwise rotation by 360 − rotate (ffmpeg's angles are
    /// anticlockwise); `DisplayMatrix(clockwise:)` — what trackd derives from a rotation tag — gives the same nine.
    @Test(arguments: [90, 180, 270])
    func theDerivedMatrixIsFfmpegs(_ rotate: Int) throws {
        let file = Media.dir + "/rotate-derived-\(rotate).mp4"
        let r = try run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-i", Media.faststart, "-c", "copy",
                                   "-metadata:s:v", "rotate=\(rotate)", file])
        try #require(r.status == 0, "ffmpeg: \(r.stderr)")
        #expect(DisplayMatrix(clockwise: Int32(360 - rotate)).values == (try Self.ffprobeMatrix(file)))
    }

    /// Not MP4: nothing.
    @Test func otherContainersHaveNone() throws {
        let file = Media.dir + "/rotate-none.mkv"
        let r = try run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-i", Media.faststart, "-c", "copy", file])
        try #require(r.status == 0, "ffmpeg: \(r.stderr)")
        #expect(try Self.matrices(file).isEmpty)
    }
}
