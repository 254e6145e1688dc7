import Foundation
import GstBridge
import TrackdProtocol
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct ErrorTests {
    func code(_ body: () throws -> Void) -> AVErrorCode? {
        do {
            try body()
            return nil
        } catch let error as TrackError {
            return error.knownCode
        } catch {
            return nil
        }
    }

    @Test func directoryIsNotARegularFile() {
        let fd = open(Fixtures.directory.path, O_RDONLY | O_DIRECTORY)
        #expect(fd >= 0)
        var directory = stat()
        #expect(fstat(fd, &directory) == 0)
        do {
            _ = try MediaSource(fd: fd)
            Issue.record("accepted a directory")
        } catch {
            #expect(error.knownCode == .invalidSourceMedia)
            #expect(error.message.contains("not a regular file"))
        }
        // Closed by the failed init. Tests run in parallel, so the number may already name another test's file:
        // closed means not open, or open on something else.
        var now = stat()
        let stillOurs = fcntl(fd, F_GETFD) != -1 && fstat(fd, &now) == 0
            && now.st_dev == directory.st_dev && now.st_ino == directory.st_ino
        #expect(!stillOurs)
    }

    @Test func pipeIsNotARegularFile() {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        #expect(code { _ = try MediaSource(fd: fds[0]) } == .invalidSourceMedia)
        close(fds[1])
    }

    @Test func emptyFile() throws {
        let path = Fixtures.directory.appendingPathComponent("empty.mp4").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        #expect(code { _ = try MediaSource(fd: Fixtures.open(path)) } == .fileFormatNotRecognized)
    }

    @Test func textFile() throws {
        let path = Fixtures.directory.appendingPathComponent("notes.txt").path
        let text = String(repeating: "This is not a movie, just some plain text.\n", count: 200)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
        let source = try Fixtures.source(path)
        do {
            _ = try source.discover()
            Issue.record("discovered a text file")
        } catch {
            #expect(error.knownCode == .fileFormatNotRecognized, "\(error)")
        }
    }

    /// 64 KiB of noise, the same every run: fresh noise each run could, rarely, pass a typefinder's checks (an
    /// MPEG-audio frame sync with a few plausible headers after it) and be opened as a stream, and did once.
    @Test func randomBytes() throws {
        let path = Fixtures.directory.appendingPathComponent("noise.bin").path
        var rng = SplitMix64(seed: 0x5EED_1234_ABCD_0001)
        let bytes = (0..<65536).map { _ in UInt8.random(in: 0...255, using: &rng) }
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        #expect(code { _ = try Fixtures.source(path).discover() } == .fileFormatNotRecognized)
    }

    /// An mp4 whose moov atom is cut off: GStreamer's demuxer error, as fileFailedToParse.
    @Test func truncatedMP4() throws {
        let clip = try Data(contentsOf: URL(fileURLWithPath: try Fixtures.clip()))
        let path = Fixtures.directory.appendingPathComponent("truncated.mp4").path
        #expect(FileManager.default.createFile(atPath: path, contents: clip.prefix(clip.count / 2)))
        do {
            let result = try Fixtures.source(path).discover()
            Issue.record("discovered a truncated file: \(result)")
        } catch let error as TrackError {
            #expect(error.knownCode == .fileFailedToParse, "\(error)")
            #expect(error.message.count > 20)
        }
    }

    /// A track the asset lacks is refused as the demuxer's data shows it (Routing's noSuchTrack, naming the id), not
    /// by the bound on a stuck pipeline, which ends in fileFailedToParse ("no verdict from the pipeline") instead —
    /// told apart by the answer, not by a clock a loaded machine stretches.
    @Test func unknownTrack() throws {
        let source = try Fixtures.source(try Fixtures.clip())
        do throws(TrackError) {
            _ = try TrackPipeline(source: source, trackID: 7, mode: .passthrough, timeRange: .everything)
            Issue.record("a pipeline for a track the asset does not have")
        } catch {
            #expect(error.knownCode == .invalidArgument, "\(error)")
            #expect(error.message == "the asset has no track with id 7", "\(error)")
        }
    }

    @Test func decodeAudioTrackAsVideo() throws {
        let request = VideoOutputRequest(pixelFormat: PixelFormat.named("BGRA")!)
        #expect(code {
            _ = try TrackPipeline(source: try Fixtures.source(try Fixtures.clip()), trackID: 2,
                                  mode: .decode(request), timeRange: .everything)
        } == .unsupportedOutputSettings)
    }
}
