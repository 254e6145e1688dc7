import Foundation
import TrackdProtocol
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `trackctl contact-sheet`: the PNG's geometry is the documented grid, and each tile holds the exact frame shown
/// at the centre of its slice of the track (compared byte for byte with `trackctl frames` of that frame).
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct ContactSheetTests {
    /// Media.clip: 320x240 (tiles 320x240, TH = 240), 2 s at 30 fps. --count 8: C = ⌈√(8·4·240/960)⌉ = 3
    /// columns, R = 3 rows (the last one partial); slice centres (i + ½)·2/8 s fall inside frames 3, 11, 18, …
    @Test func gridGeometryAndTilesAreTheExactFrames() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let dir = Env.tempDir("sheet")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sheet = dir + "/sheet.png"
        let r = try daemon.trackctl(["contact-sheet", Media.clip, "--count", "8", "--output", sheet])
        #expect(r.status == 0, "\(r.stderr)")

        let (columns, tileWidth, tileHeight) = (3, 320, 240)
        let width = 12 + columns * (tileWidth + 12), height = 40 + 3 * (tileHeight + 34)
        let probe = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height",
                                        "-of", "csv=p=0", sheet])
        #expect(probe.status == 0, "ffprobe: \(probe.stderr)")
        #expect(probe.text.trimmingCharacters(in: .whitespacesAndNewlines) == "png,\(width),\(height)")

        let decoded = try run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-i", sheet, "-f", "rawvideo", "-pix_fmt", "bgra", "-"])
        #expect(decoded.status == 0, "ffmpeg: \(decoded.stderr)")
        let pixels = [UInt8](decoded.stdout)
        try #require(pixels.count == width * height * 4)

        let pts = try Oracle.framePTS(Media.clip)
        #expect(pts.count == 60)
        /// The frame whose display interval contains `t` (30 fps: each lasts 1/30 s).
        func frameShown(at t: Double) -> Int { pts.lastIndex { $0 <= t + 1e-9 } ?? 0 }
        func tile(_ i: Int) -> [UInt8] {  // B, G, R of the tile's picture, row by row
            let x0 = 12 + (i % columns) * (tileWidth + 12), y0 = 40 + (i / columns) * (tileHeight + 34)
            var out: [UInt8] = []
            for y in y0..<y0 + tileHeight {
                for x in x0..<x0 + tileWidth { out += pixels[(y * width + x) * 4..<(y * width + x) * 4 + 3] }
            }
            return out
        }
        func frame(_ index: Int) throws -> [UInt8] {
            let path = dir + "/frame\(index).bgra"
            let f = try daemon.trackctl(["frames", Media.clip, "--index", "\(index)", "--pixel-format", "BGRA",
                                         "--width", "\(tileWidth)", "--height", "\(tileHeight)", "--output", path])
            #expect(f.status == 0, "\(f.stderr)")
            let bgra = [UInt8](try #require(FileManager.default.contents(atPath: path)))
            try #require(bgra.count == tileWidth * tileHeight * 4)
            return stride(from: 0, to: bgra.count, by: 4).flatMap { bgra[$0..<$0 + 3] }
        }
        func maxDifference(_ a: [UInt8], _ b: [UInt8]) -> Int {
            zip(a, b).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
        }
        let indices = (0..<8).map { frameShown(at: (Double($0) + 0.5) * 2 / 8) }
        #expect(indices == [3, 11, 18, 26, 33, 41, 48, 56])
        for (i, index) in indices.enumerated() where [0, 4, 7].contains(i) {
            let expected = try frame(index)
            #expect(maxDifference(tile(i), expected) == 0, "tile \(i) is not frame \(index)")
        }
        // The comparison can fail: another frame differs from tile 0.
        #expect(maxDifference(tile(0), try frame(indices[7])) > 32)
        // The ninth cell of the 3x3 grid is empty: background only.
        let empty = tile(8)
        #expect(Set(empty).count <= 3, "the empty cell has picture content")
    }

    /// A track rotated 90° (tkhd matrix) is shown as a player shows it: Media.clip's 320x240 frames become 240x320
    /// displays, so TH = 2·round(320·320/240 / 2) = 426 and the frames are decoded at 426x320, then turned
    /// clockwise: the tile's pixel (x, y) is the frame's pixel (column y, row 319 − x).
    /// (Measured: identical; 2 levels allowed for cairo's filter at a transform of cos 90° ≈ 6e-17.)
    @Test func rotatedTrackIsShownUpright() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let dir = Env.tempDir("sheet-rotated")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var bytes = [UInt8](try #require(FileManager.default.contents(atPath: Media.clip)))
        let tkhd = try #require((0..<bytes.count - 4).first { bytes[$0..<$0 + 4].elementsEqual("tkhd".utf8) })
        try #require(bytes[tkhd + 4] == 0, "tkhd version 0 expected")
        let matrix: [UInt32] = [0, 0x0001_0000, 0, 0xFFFF_0000, 0, 0, 0, 0, 0x4000_0000]  // 90° clockwise
        for (i, v) in matrix.enumerated() {
            for b in 0..<4 { bytes[tkhd + 4 + 40 + i * 4 + b] = UInt8(truncatingIfNeeded: v >> (24 - 8 * UInt32(b))) }
        }
        let rotated = dir + "/rotated.mp4", sheet = dir + "/sheet.png"
        _ = FileManager.default.createFile(atPath: rotated, contents: Data(bytes))
        let r = try daemon.trackctl(["contact-sheet", rotated, "--count", "4", "--output", sheet])
        #expect(r.status == 0, "\(r.stderr)")
        // C = ⌈√(4·4·426/960)⌉ = 3, R = 2.
        let (tileWidth, tileHeight) = (320, 426)
        let width = 12 + 3 * 332, height = 40 + 2 * (tileHeight + 34)
        let decoded = try run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-i", sheet, "-f", "rawvideo", "-pix_fmt", "bgra", "-"])
        #expect(decoded.status == 0, "ffmpeg: \(decoded.stderr)")
        let pixels = [UInt8](decoded.stdout)
        try #require(pixels.count == width * height * 4, "the sheet is not \(width)x\(height)")

        // Tile 0: the frame shown at 0.25 s, frame 7 (mid-frame at 30 fps), decoded at 426x320.
        let path = dir + "/frame.bgra"
        let f = try daemon.trackctl(["frames", rotated, "--index", "7", "--pixel-format", "BGRA", "--width", "426", "--height", "320",
                                     "--rotation", "keep", "--output", path])
        #expect(f.status == 0, "\(f.stderr)")
        let frame = [UInt8](try #require(FileManager.default.contents(atPath: path)))
        try #require(frame.count == 426 * 320 * 4)
        var upright = 0, unturned = 0
        for y in 0..<tileHeight {
            for x in 0..<tileWidth {
                let sheetPixel = ((40 + y) * width + 12 + x) * 4
                let turned = ((319 - x) * 426 + y) * 4  // row 319 − x, column y
                let straight = (min(y, 319) * 426 + min(x, 425)) * 4  // the frame laid on without turning
                for c in 0..<3 {
                    upright = max(upright, abs(Int(pixels[sheetPixel + c]) - Int(frame[turned + c])))
                    unturned += abs(Int(pixels[sheetPixel + c]) - Int(frame[straight + c]))
                }
            }
        }
        #expect(upright <= 2, "tile 0 differs from frame 7 turned clockwise by up to \(upright)")
        #expect(unturned / (tileWidth * tileHeight * 3) > 10, "tile 0 also matches the frame unturned")
    }

    @Test func errorsAreClear() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let dir = Env.tempDir("sheet-errors")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let out = dir + "/sheet.png"
        let zero = try daemon.trackctl(["contact-sheet", Media.clip, "--count", "0", "--output", out])
        #expect(zero.status == 2 && zero.stderr.contains("--count takes a number of frames from 1 to 100, not 0"), "\(zero.stderr)")
        let noOutput = try daemon.trackctl(["contact-sheet", Media.clip])
        #expect(noOutput.status == 2 && noOutput.stderr.contains("contact-sheet needs --output"), "\(noOutput.stderr)")
        let tone = Media.make("sheet-tone.m4a", ["-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-c:a", "aac"])
        let audioOnly = try daemon.trackctl(["contact-sheet", tone, "--output", out])
        #expect(audioOnly.status == 1 && audioOnly.stderr.contains("-11901") && audioOnly.stderr.contains("has no video track"),
                "\(audioOnly.stderr)")
        let audioTrack = try daemon.trackctl(["contact-sheet", Media.clip, "--track", "2", "--output", out])
        #expect(audioTrack.status == 1 && audioTrack.stderr.contains("-11838") && audioTrack.stderr.contains("is audio, not video"),
                "\(audioTrack.stderr)")
        let unwritable = try daemon.trackctl(["contact-sheet", Media.clip, "--count", "1", "--output", dir + "/missing/sheet.png"])
        #expect(unwritable.status == 1 && unwritable.stderr.contains("cannot write \(dir)/missing/sheet.png"), "\(unwritable.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(daemon.isRunning)
    }
}
