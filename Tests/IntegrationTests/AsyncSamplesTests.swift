import Foundation
import Synchronization
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// `for try await sample in output.samples`: the same samples as copyNextSampleBuffer, the reader's error thrown,
/// cancellation of the iterating task cancels the reader.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct AsyncSamplesTests {
    static let bgra: [String: SettingValue] = [SettingsKey.pixelFormatType: .int(Int64(FourCC("BGRA").rawValue))]

    func startedOutput(_ asset: Asset, copies: Bool = true) throws -> (AssetReader, AssetReaderTrackOutput) {
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: Self.bgra)
        try output.setAlwaysCopiesSampleData(copies)
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading(), "startReading: \(String(describing: reader.error))")
        return (reader, output)
    }

    @Test func asyncSamplesEqualCopyNextSampleBuffer() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)

        let (syncReader, syncOutput) = try startedOutput(asset)
        var expected: [(Double, String)] = []
        while let sample = try syncOutput.copyNextSampleBuffer() {
            expected.append((sample.presentationTimeStamp.seconds, md5Hex(sample.packedBytes())))
        }
        #expect(syncReader.status == .completed)

        let (reader, output) = try startedOutput(asset, copies: false)
        var got: [(Double, String)] = []
        for try await sample in output.samples {
            got.append((sample.presentationTimeStamp.seconds, md5Hex(sample.packedBytes())))
        }
        #expect(reader.status == .completed)
        #expect(got.count == 60 && got.count == expected.count)
        for (i, (g, e)) in zip(got, expected).enumerated() {
            #expect(g.0 == e.0 && g.1 == e.1, "sample \(i)")
        }
        // A new iterator of an ended output ends at once, as copyNextSampleBuffer keeps returning nil.
        var again = output.samples.makeAsyncIterator()
        #expect(try await again.next() == nil)
    }

    @Test func iteratingBeforeStartThrowsTheUsageError() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: Self.bgra)
        await #expect(throws: AssetReaderUsageError.self) {
            for try await _ in output.samples {}
        }
    }

    /// A failing reader (its worker killed mid-read) makes the loop throw the reader's error: a failure cannot pass
    /// for the end of the track.
    @Test func aFailedReaderThrowsItsError() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let worker = try asset.serverStatus().workerPID
        let (reader, output) = try startedOutput(asset)
        var got = 0
        do {
            for try await _ in output.samples {
                got += 1
                if got == 5 { kill(pid_t(worker), SIGKILL) }
            }
            Issue.record("the loop ended without throwing after \(got) samples")
        } catch let error as TrackError {
            #expect(error.code == AVErrorCode.mediaServicesWereReset.rawValue, "\(error)")
            #expect(error == reader.error)
        }
        #expect(got >= 5 && got < 60)
        #expect(reader.status == .failed)
    }

    /// Cancelling the iterating task ends the loop without an error and cancels the reader, without waiting for the
    /// worker: here the worker is stopped (SIGSTOP) after the first sample, so the output can never complete and the
    /// loop is waiting (or about to wait) for a sample that cannot come. After SIGCONT the same connection serves a
    /// new reader.
    @Test func cancellingTheTaskCancelsTheReader() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let worker = pid_t(try asset.serverStatus().workerPID)
        let (reader, output) = try startedOutput(asset)
        let (firstSample, firstSampleSeen) = AsyncStream.makeStream(of: Void.self)
        let task = Task { () throws -> Int in
            var count = 0
            for try await _ in output.samples {
                count += 1
                firstSampleSeen.yield()
            }
            return count
        }
        for await _ in firstSample { break }
        kill(worker, SIGSTOP)  // at most a pool's worth of samples (8) is in flight beyond the one consumed
        task.cancel()
        let count = try await task.value
        #expect(count >= 1 && count < 60)
        #expect(reader.status == .cancelled)
        #expect(reader.error == nil)
        kill(worker, SIGCONT)

        let (next, nextOutput) = try startedOutput(asset)
        var total = 0
        for try await _ in nextOutput.samples { total += 1 }
        #expect(total == 60)
        #expect(next.status == .completed)
    }

    /// A task cancelled before it iterates reads nothing and cancels the reader.
    @Test func aCancelledTaskReadsNothing() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let (reader, output) = try startedOutput(asset)
        let task = Task { () throws -> Int in
            withUnsafeCurrentTask { $0?.cancel() }
            var count = 0
            for try await _ in output.samples { count += 1 }
            return count
        }
        #expect(try await task.value == 0)
        #expect(reader.status == .cancelled)
    }
}
