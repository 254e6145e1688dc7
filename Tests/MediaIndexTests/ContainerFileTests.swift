import Foundation
import MediaIndex
import TestSupport
import Testing

/// ContainerIndex on a file ffmpeg makes (H.264 with B-frames, moov first) and on damaged copies of it — the
/// worker reads these tables from untrusted files. (That its times are exactly qtdemux's is GstBridgeTests'
/// ContainerIndexTests, which need GStreamer.) Needs ffmpeg, no GStreamer and no daemon.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ContainerFileTests {
    /// This run's own directory (as GstBridgeTests' Fixtures: no file another run, user or older recipe left).
    static let directory = URL(fileURLWithPath: Env.tempDir("mediaindex-fixtures"))

    static let lock = NSLock()

    /// 2 s of 64x48 H.264, two B-frames, GOP 12, moov first; made once (atomically renamed into place).
    static func faststart() throws -> [UInt8] {
        let path = directory.appendingPathComponent("ci-faststart.mp4").path
        try lock.withLock {
            if !FileManager.default.fileExists(atPath: path) { try make(path) }
        }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    private static func make(_ path: String) throws {
        let temporary = path + ".\(getpid()).tmp.mp4"
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        ffmpeg.arguments = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30",
                            "-t", "2", "-c:v", "libx264", "-bf", "2", "-g", "12", "-movflags", "+faststart", temporary]
        let errors = Pipe()
        ffmpeg.standardError = errors
        try ffmpeg.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        ffmpeg.waitUntilExit()
        try #require(ffmpeg.terminationStatus == 0, "ffmpeg: \(String(decoding: message, as: UTF8.self))")
        try #require(rename(temporary, path) == 0, "rename \(temporary)")
    }

    @Test func theFileIsIndexed() throws {
        let frames = try #require(try framesFromFile(try Self.faststart()))
        #expect(frames.count == 60)
        #expect(frames.first?.isSync == true)
        #expect(frames.filter(\.isSync).count >= 5)  // GOP 12
        #expect(Set(frames.map(\.decodePosition)) == Set(0..<60))
        #expect(frames.map(\.presentationTime) == frames.map(\.presentationTime).sorted())
        #expect(frames.contains { $0.decodePosition != frames.firstIndex(of: $0) })  // B-frames: reordered
    }

    /// A file cut short is never indexed from its tables: wherever the cut, in the moov (tables damaged) or in the
    /// samples (tables listing data the file does not have), the reader refuses and the parse-only pass decides.
    @Test func truncatedFilesAreRefused() throws {
        let bytes = try Self.faststart()
        #expect(try framesFromFile(bytes) != nil)
        var tried = 0
        for cut in stride(from: 8, to: bytes.count, by: 13) {
            #expect(try framesFromFile(Array(bytes.prefix(cut))) == nil, "cut at \(cut)")
            tried += 1
        }
        #expect(tried > 100)
    }

    /// Hostile tables: random bytes changed in the moov never crash the reader or make it allocate beyond qtdemux's
    /// own sample limit; what it returns is well-formed.
    @Test func mutatedTablesNeverCrash() throws {
        let original = try Self.faststart()
        let moov = try #require(RefusedTablesTests.find("moov", in: original))
        var rng = SplitMix64(seed: 0x7AB1_E5ED_0001)  // fixed: make test gives the same answer every run
        var accepted = 0
        for round in 0..<1500 {
            var bytes = original
            for _ in 0..<(1 + round % 8) {
                let at = Int.random(in: (moov - 4)..<min(bytes.count, moov + 2000), using: &rng)
                bytes[at] = round % 3 == 0 ? 0xFF : UInt8.random(in: 0...255, using: &rng)
            }
            guard let frames = try framesFromFile(bytes) else { continue }
            accepted += 1
            #expect(frames.count <= ContainerIndex.maxSamples)
            #expect(Set(frames.map(\.decodePosition)).count == frames.count)
            #expect(frames.allSatisfy { $0.presentationTime >= 0 && $0.duration >= 0 })
        }
        #expect(accepted < 1500)  // most damage is refused
    }
}
