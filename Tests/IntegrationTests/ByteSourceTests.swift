import CMD5
import Foundation
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// Media given as bytes, as an open descriptor (a regular file or a pipe) and as trackctl's `-` (standard input)
/// reads exactly what the same file read by path does; and each way a source can be wrong is a clear error.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct ByteSourceTests {
    /// Every frame of the first video track decoded to y420, as MD5s of the packed planes.
    static func frameMD5s(_ asset: Asset) throws -> [String] {
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: ["PixelFormatType": .string("y420")])
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        try #require(try reader.startReading(), "\(String(describing: reader.error))")
        var md5s: [String] = []
        while let sample = try output.copyNextSampleBuffer() { md5s.append(Self.md5(sample.packedBytes())) }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        return md5s
    }

    static func md5(_ bytes: [UInt8]) -> String {
        var context = MD5_CTX()
        MD5Init(&context)
        bytes.withUnsafeBufferPointer { MD5Update(&context, $0.baseAddress, $0.count) }
        var digest = [UInt8](repeating: 0, count: 16)
        MD5Final(&digest, &context)
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    static func contents(_ path: String) throws -> [UInt8] { [UInt8](try #require(FileManager.default.contents(atPath: path))) }

    /// A pipe whose write end a thread fills with `bytes` and closes; returns the read end (the caller closes it).
    static func pipe(feeding bytes: [UInt8]) throws -> Int32 {
        var ends: [Int32] = [0, 0]
        try #require(Glibc.pipe(&ends) == 0)
        let writer = ends[1]
        Thread {
            bytes.withUnsafeBytes { all in
                var done = 0
                while done < all.count {
                    let n = write(writer, all.baseAddress! + done, all.count - done)
                    if n <= 0 { break }
                    done += n
                }
            }
            close(writer)
        }.start()
        return ends[0]
    }

    static func error(_ body: () throws(TrackError) -> Asset) -> TrackError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }

    @Test func bytesDescriptorsAndPipesReadLikeThePath() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let socket = daemon.socketPath
        let byPath = try Asset(path: Media.clip, socketPath: socket)
        let expected = try Self.frameMD5s(byPath)
        #expect(expected == (try Oracle.frameMD5(Media.clip, pixFmt: "yuv420p")).map(\.md5))
        #expect(expected.count == 60)
        let bytes = try Self.contents(Media.clip)
        #expect(byPath.byteCount == UInt64(bytes.count))
        #expect(byPath.name == "clip.mp4" && byPath.path == Media.clip)

        let fromData = try Asset(data: bytes, socketPath: socket)
        #expect(fromData.name == "<\(bytes.count) bytes>" && fromData.path == fromData.name)
        let fromBuffer = try bytes.withUnsafeBytes { buffer throws(TrackError) in
            try Asset(bytes: buffer, name: "clip from a buffer", socketPath: socket)
        }
        #expect(fromBuffer.name == "clip from a buffer")

        let file = open(Media.clip, O_RDONLY | O_CLOEXEC)
        try #require(file >= 0)
        defer { close(file) }
        let fromFile = try Asset(fileDescriptor: file, socketPath: socket)
        #expect(fromFile.name == "fd \(file)")
        // The caller's descriptor is still its own: open, at offset 0 (trackd reads its duplicate with pread).
        #expect(fcntl(file, F_GETFD) >= 0 && lseek(file, 0, SEEK_CUR) == 0)

        let readEnd = try Self.pipe(feeding: bytes)
        defer { close(readEnd) }
        let fromPipe = try Asset(fileDescriptor: readEnd, name: "a pipe", socketPath: socket)

        for (label, asset) in [("data", fromData), ("buffer", fromBuffer), ("fd", fromFile), ("pipe", fromPipe)] {
            #expect(asset.byteCount == UInt64(bytes.count), "\(label)")
            #expect(asset.tracks == byPath.tracks && asset.duration == byPath.duration, "\(label)")
            #expect(try Self.frameMD5s(asset) == expected, "\(label): frames differ from the path's")
        }
        // Random access and images work on a memfd source like on a file.
        let video = try #require(fromPipe.tracks(withMediaType: .video).first)
        let frames = try fromPipe.frames(atIndices: [59, 0, 31], track: video, outputSettings: ["PixelFormatType": .string("y420")])
        #expect(frames.map { Self.md5($0.sample.packedBytes()) } == [expected[59], expected[0], expected[31]])
        #expect(try fromData.generateImage(track: video, at: .zero).png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
    }

    @Test func badSourcesGetClearErrors() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let socket = daemon.socketPath
        let bytes = try Self.contents(Media.clip)

        let empty = try #require(Self.error { () throws(TrackError) in try Asset(data: [], socketPath: socket) })
        #expect(empty.code == AVErrorCode.invalidArgument.rawValue && empty.message == "the media source is empty (0 bytes)", "\(empty)")
        let emptyPipe = try Self.pipe(feeding: [])
        defer { close(emptyPipe) }
        let nothing = try #require(Self.error { () throws(TrackError) in try Asset(fileDescriptor: emptyPipe, socketPath: socket) })
        #expect(nothing.message == "the media source is empty (0 bytes)", "\(nothing)")

        let big = try #require(Self.error { () throws(TrackError) in try Asset(data: bytes, socketPath: socket, maxBytes: 1000) })
        #expect(big.code == AVErrorCode.limitExceeded.rawValue, "\(big)")
        #expect(big.message.hasPrefix("a \(bytes.count)-byte buffer is larger than maxBytes=1000"), "\(big)")
        let bigPipe = try Self.pipe(feeding: bytes)
        defer { close(bigPipe) }
        let bigRead = try #require(Self.error { () throws(TrackError) in
            try Asset(fileDescriptor: bigPipe, name: "the pipe", socketPath: socket, maxBytes: 1000)
        })
        #expect(bigRead.code == AVErrorCode.limitExceeded.rawValue && bigRead.message.hasPrefix("the pipe is larger than maxBytes=1000"), "\(bigRead)")
        #expect(Asset.maxSourceBytes == 4 << 30)

        let dir = open(Media.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try #require(dir >= 0)
        defer { close(dir) }
        let directory = try #require(Self.error { () throws(TrackError) in try Asset(fileDescriptor: dir, socketPath: socket) })
        #expect(directory.code == AVErrorCode.invalidSourceMedia.rawValue && directory.message == "fd \(dir) is a directory, not a media file", "\(directory)")

        let closed = try #require(Self.error { () throws(TrackError) in try Asset(fileDescriptor: 987, socketPath: socket) })
        #expect(closed.code == AVErrorCode.invalidArgument.rawValue && closed.message.hasPrefix("file descriptor 987 is not open"), "\(closed)")
        let negative = try #require(Self.error { () throws(TrackError) in try Asset(fileDescriptor: -1, socketPath: socket) })
        #expect(negative.message.hasPrefix("file descriptor -1 is not open"), "\(negative)")
        let writeOnly = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(writeOnly) }
        let unreadable = try #require(Self.error { () throws(TrackError) in try Asset(fileDescriptor: writeOnly, socketPath: socket) })
        #expect(unreadable.code == AVErrorCode.invalidArgument.rawValue && unreadable.message.contains("writing only"), "\(unreadable)")

        // Bytes that are not media reach the worker and get its answer; the daemon serves on.
        let text = try #require(Self.error { () throws(TrackError) in try Asset(data: Array("not a video\n".utf8), socketPath: socket) })
        #expect(text.code == AVErrorCode.fileFormatNotRecognized.rawValue, "\(text)")
        #expect(try Asset(data: bytes, socketPath: socket).tracks.count == 2)
    }

    /// trackctl: FILE `-` is standard input, a pipe (read into a memfd) or a regular file (passed as it is).
    @Test func trackctlReadsStandardInput() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        func shell(_ line: String) throws -> Run {
            try run("sh", ["-c", line.replacingOccurrences(of: "TRACKCTL", with: "'\(Env.trackctl)' --socket '\(daemon.socketPath)'")])
        }
        let byPath = try daemon.trackctl(["read", Media.clip, "--md5"])
        #expect(byPath.status == 0 && byPath.text.split(separator: "\n").count == 60, "\(byPath.stderr)")
        let piped = try shell("cat '\(Media.clip)' | TRACKCTL read - --md5")
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.text == byPath.text)
        let redirected = try shell("TRACKCTL read - --md5 < '\(Media.clip)'")
        #expect(redirected.status == 0 && redirected.text == byPath.text, "\(redirected.stderr)")

        let tracks = try daemon.trackctl(["tracks", Media.clip])
        let stdinTracks = try shell("TRACKCTL tracks - < '\(Media.clip)'")
        #expect(stdinTracks.status == 0, "\(stdinTracks.stderr)")
        #expect(stdinTracks.text.hasPrefix("stdin: duration "))
        #expect(stdinTracks.text.replacingOccurrences(of: "stdin: ", with: "\(Media.clip): ") == tracks.text)
        let json = try shell("cat '\(Media.clip)' | TRACKCTL tracks --json -")
        let pathJSON = try daemon.trackctl(["tracks", "--json", Media.clip])
        #expect(json.status == 0 && json.stdout == pathJSON.stdout, "\(json.stderr)")

        let empty = try shell("TRACKCTL read - --md5 < /dev/null")
        #expect(empty.status == 1 && empty.stderr.contains("the media source is empty (0 bytes)"), "\(empty.stderr)")
        let notMedia = try shell("echo 'not a video' | TRACKCTL tracks -")
        #expect(notMedia.status == 1 && notMedia.stderr.contains("\(AVErrorCode.fileFormatNotRecognized.rawValue)"), "\(notMedia.stderr)")
    }
}
