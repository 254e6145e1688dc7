import Foundation
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// Bad input gets a clear error and nothing else breaks; a worker's death is contained.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct FailureTests {
    func openError(_ path: String, _ daemon: Daemon) -> TrackError? {
        do {
            _ = try Asset(path: path, socketPath: daemon.socketPath)
            return nil
        } catch {
            return error
        }
    }

    @Test func badFilesGetClearErrorsAndTheDaemonServesOn() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let notMedia = try #require(openError(Media.text, daemon))
        #expect(notMedia.code == AVErrorCode.fileFormatNotRecognized.rawValue, "\(notMedia)")
        let empty = try #require(openError(Media.empty, daemon))
        #expect(empty.code == AVErrorCode.fileFormatNotRecognized.rawValue, "\(empty)")
        let directory = try #require(openError(Media.dir, daemon))
        #expect(directory.code == AVErrorCode.invalidSourceMedia.rawValue, "\(directory)")
        #expect(directory.message.contains("regular file"), "\(directory.message)")
        let missing = try #require(openError(Media.dir + "/no-such-file.mp4", daemon))
        #expect(missing.code == AVErrorCode.invalidSourceMedia.rawValue)
        #expect(missing.message.contains("No such file"))
        // A truncated file: the first 40% of a file whose moov is at its end, so no sample table survives and it
        // cannot open (the sample data alone is not a movie).
        let truncated = try #require(openError(Media.truncated, daemon), "a file without its moov opened")
        #expect([AVErrorCode.fileFailedToParse, .fileFormatNotRecognized, .failedToLoadMediaData]
            .map(\.rawValue).contains(truncated.code), "\(truncated)")
        // Still serving.
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        #expect(asset.tracks.count == 2)
        #expect(daemon.isRunning)
    }

    @Test func unsupportedSettingsNameTheProblem() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        func rejection(_ settings: [String: SettingValue]) -> TrackError? {
            do {
                _ = try AssetReaderTrackOutput(track: track, outputSettings: settings)
                return nil
            } catch {
                return error
            }
        }
        let unknown = try #require(rejection(["PixelFormatType": .string("BGRA"), "Colour": .int(1)]))
        #expect(unknown.code == AVErrorCode.unsupportedOutputSettings.rawValue)
        #expect(unknown.message == "Output settings dictionary contains one or more invalid keys: Colour")
        let aperture = try #require(rejection(["AVVideoCleanApertureKey": .dictionary([:])]))
        #expect(aperture.message == "AVAssetReaderTrackOutput does not currently support AVVideoCleanApertureKey")
        let compressed = try #require(rejection(["AVVideoCodecKey": .string("avc1")]))
        #expect(compressed.message.contains("compressed output"))
        let format = try #require(rejection(["PixelFormatType": .string("v308")]))
        #expect(format.code == AVErrorCode.unsupportedOutputSettings.rawValue)
    }

    /// The worker checks everything again: a client that skips TrackClient's validation gets the same errors from
    /// the worker, and the session stays usable.
    @Test func workerValidatesRawRequests() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawClient(socketPath: daemon.socketPath)
        let asset = try raw.openAsset(Media.clip)
        let badKey = try raw.request(.createOutput(CreateOutput(assetID: asset.assetID, trackID: 1, timeRange: .everything,
                                                                settings: ["Frobnicate": .bool(true)])))
        #expect(badKey == .error(TrackError(.unsupportedOutputSettings, "Output settings dictionary contains one or more invalid keys: Frobnicate")))
        let badTrack = try raw.request(.createOutput(CreateOutput(assetID: asset.assetID, trackID: 99, timeRange: .everything, settings: [:])))
        guard case .error(let e) = badTrack else { Issue.record("expected an error, got \(badTrack)"); return }
        #expect(e.code == AVErrorCode.invalidArgument.rawValue && e.message.contains("99"))
        let badAsset = try raw.request(.closeAsset(assetID: 77))
        guard case .error(let e2) = badAsset else { Issue.record("expected an error, got \(badAsset)"); return }
        #expect(e2.code == AVErrorCode.invalidArgument.rawValue)
        // A descriptor the worker cannot read from (opened write-only) fails that request only.
        let writeOnly = open(Media.dir + "/write-only.mp4", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        let unreadable = try raw.request(.openAsset(name: "write-only.mp4"), fds: [writeOnly])
        close(writeOnly)
        guard case .error(let e3) = unreadable else { Issue.record("expected an error, got \(unreadable)"); return }
        #expect([AVErrorCode.failedToLoadMediaData, .fileFormatNotRecognized, .invalidSourceMedia].map(\.rawValue).contains(e3.code), "\(e3)")
        // Still the same worker, still answering.
        guard case .status = try raw.request(.getStatus) else { Issue.record("no status"); return }
    }

    /// A broken frame ends that connection with a protocol error; the supervisor and other clients are untouched.
    @Test func protocolViolationsCloseOnlyThatConnection() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let bystander = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let raw = try RawClient(socketPath: daemon.socketPath)
        var bogus = [UInt8](repeating: 0, count: 16)
        bogus[0] = 4  // length 4
        bogus[4] = 0x77  // unknown type
        // MSG_NOSIGNAL: the worker may close on the header alone, and a write to the closed connection would
        // raise SIGPIPE and kill this test process (it did, once, under load).
        _ = bogus.withUnsafeBytes { send(raw.socket.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        _ = [UInt8](repeating: 0, count: 4).withUnsafeBytes { send(raw.socket.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let answer = (try? raw.socket.receive())?.message
        if case .error(let e)? = answer {
            #expect(e.code == AVErrorCode.protocolViolation.rawValue)
        } else {
            Issue.record("expected a protocol error, got \(String(describing: answer))")
        }
        #expect(throws: MessageSocket.ReceiveError.self) { _ = try raw.socket.receive() }
        #expect(try bystander.serverStatus().workerPID > 0)
        #expect(daemon.isRunning)
    }

    @Test func killedWorkerFailsTheReaderWithMediaServicesWereReset() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let worker = try asset.serverStatus().workerPID
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: ["PixelFormatType": .string("BGRA")])
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading())
        var got = 0
        while let _ = try output.copyNextSampleBuffer() {
            got += 1
            if got == 5 { kill(pid_t(worker), SIGKILL) }
        }
        #expect(got >= 5 && got < 60)
        #expect(reader.status == .failed)
        #expect(reader.error?.code == AVErrorCode.mediaServicesWereReset.rawValue)
        // The supervisor counted it (a worker ended by a signal it did not send) and serves the next client.
        let next = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        var crashes: UInt64 = 0
        // The supervisor reaps asynchronously; its counters are live in every worker.
        try waitUntil(timeout: .seconds(5)) { crashes = try next.serverStatus().workerCrashes; return crashes > 0 }
        #expect(crashes == 1)
        #expect(daemon.isRunning)
    }
}

/// A client speaking the wire protocol directly, bypassing TrackClient's checks.
final class RawClient {
    let socket: MessageSocket
    var nextID: UInt32 = 1

    init(socketPath: String) throws {
        let fd = try UnixSocket.connect(to: socketPath)
        socket = MessageSocket(fd: fd)
        guard case .helloReply = try request(.hello(Hello(clientName: "raw-test"))) else {
            throw TrackError(.protocolViolation, "no HelloReply")
        }
    }

    /// Opens `path` here and sends its descriptor; the worker's AssetOpened.
    func openAsset(_ path: String) throws -> AssetOpened {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        let opened = try request(.openAsset(name: String(path.split(separator: "/").last ?? "")), fds: [fd])
        guard case .assetOpened(let asset) = opened else { throw TrackError(.unknown, "expected AssetOpened, got \(opened)") }
        return asset
    }

    func request(_ m: Message, fds: [Int32] = []) throws -> Message {
        nextID += 1
        try socket.send(m, requestID: nextID, fds: fds)
        let frame = try socket.receive()
        #expect(frame.requestID == nextID)
        return frame.message
    }
}
