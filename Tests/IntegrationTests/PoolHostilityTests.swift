import CTrackSys
import Foundation
import SystemCalls
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// A client that receives a pool cannot resize it, reseal it or make the worker fault through it, and cannot
/// release a slot it does not hold (docs/PROTOCOL.md §12.2–12.3, docs/SECURITY.md).
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct PoolHostilityTests {
    static let fAddSeals: Int32 = 1033, fGetSeals: Int32 = 1034
    static let sealSeal: Int32 = 1, sealShrink: Int32 = 2, sealGrow: Int32 = 4, sealWrite: Int32 = 8

    /// A raw session with one BGRA output of `Media.clip`'s video track.
    func startOutput(_ daemon: Daemon) throws -> (RawClient, outputID: UInt32) {
        let raw = try RawClient(socketPath: daemon.socketPath)
        let asset = try raw.openAsset(Media.clip)
        let video = try #require(asset.tracks.first { $0.mediaType == .video })
        let created = try raw.request(.createOutput(CreateOutput(assetID: asset.assetID, trackID: video.id, timeRange: .everything,
                                                                 settings: ["PixelFormatType": .string("BGRA")])))
        guard case .outputCreated(let output) = created else { throw TrackError(.unknown, "expected OutputCreated, got \(created)") }
        return (raw, output.outputID)
    }

    /// The supervisor saw no worker die by a signal.
    func expectNoWorkerCrash(_ daemon: Daemon) throws {
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let status = try asset.serverStatus()
        #expect(status.workerCrashes == 0)
        // Nor did the supervisor kill one (a watchdog kill is no crash: the counter leaves it out), nor did a warm
        // worker die of a signal (not a client's crash either).
        #expect(status.watchdogKills == 0)
        #expect(daemon.events("worker-ended") { $0["how"] == "killed" }.isEmpty, "\(daemon.log)")
        #expect(daemon.isRunning)
    }

    /// The client tries to shrink, grow, reseal and scribble over every pool it receives; the worker keeps
    /// streaming and the read completes with every frame.
    @Test func receivedPoolsCannotBeResizedAndScribblingDoesNotHurtTheWorker() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (raw, outputID) = try startOutput(daemon)
        var pools = 0, samples = 0
        loop: while true {
            let frame = try raw.socket.receive()
            switch frame.message {
            case .poolAdded(let pool):
                pools += 1
                try #require(frame.fds.count == 1)
                let fd = frame.fds.rawValue(at: 0)  // (the frame owns it)
                let size = Int(pool.slotCount) * Int(pool.slotSize)
                #expect(fcntl(fd, Self.fGetSeals) == Self.sealSeal | Self.sealShrink | Self.sealGrow)
                for length in [0, size / 2, size - 1, size + 1, size * 2] {
                    #expect(ftruncate(fd, off_t(length)) == -1 && errno == EPERM, "ftruncate(\(length))")
                }
                #expect(posix_fallocate(fd, 0, off_t(size) * 2) == EPERM)  // growing by allocation: F_SEAL_GROW
                #expect(fcntl(fd, Self.fAddSeals, Self.sealWrite) == -1 && errno == EPERM)  // F_SEAL_SEAL: no changes
                var st = stat()
                #expect(fstat(fd, &st) == 0 && Int(st.st_size) == size)
                // Writable mappings are possible (the worker needs write access to the same file), but they only
                // let the client corrupt its own samples: the worker copies into slots and never reads them back.
                let map = try #require(mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0))
                try #require(map != MAP_FAILED)
                memset(map, 0xA5, size)
                munmap(map, size)
            case .sample(let sample):
                samples += 1
                try raw.socket.send(.releaseSlots(outputID: outputID, slots: [sample.slot]), requestID: 0)
            case .outputFinished(let finished):
                #expect(finished.status == .completed, "\(finished)")
                break loop
            case .poolRemoved, .rangeEnded:
                break
            default:
                Issue.record("unexpected \(frame.message)")
                break loop
            }
        }
        #expect(pools >= 1)
        #expect(samples == 60)
        guard case .status = try raw.request(.getStatus) else { Issue.record("the worker stopped answering"); return }
        try expectNoWorkerCrash(daemon)
    }

    /// Releasing a slot twice, or one never sent, is a protocol violation naming the slot; the worker ends the
    /// connection cleanly (no signal) and the supervisor serves on.
    @Test(arguments: ["twice", "never sent"])
    func releasingASlotNotHeldIsAProtocolError(_ how: String) throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let (raw, outputID) = try startOutput(daemon)
        var first: SlotRef?
        while first == nil {
            let frame = try raw.socket.receive()
            if case .sample(let sample) = frame.message { first = sample.slot }
        }
        let slot = try #require(first)
        // "twice" in one message: in two, the worker could hand the slot out again in between.
        let bogus = how == "twice" ? slot : SlotRef(poolID: slot.poolID &+ 1000, slot: 7)
        let release = how == "twice" ? [slot, slot] : [bogus]
        try raw.socket.send(.releaseSlots(outputID: outputID, slots: release), requestID: 99)
        var error: TrackError?
        while error == nil {
            guard let frame = try? raw.socket.receive() else { break }
            if case .error(let e) = frame.message { error = e }
        }
        let e = try #require(error, "no Error before the close")
        #expect(e.code == AVErrorCode.protocolViolation.rawValue)
        #expect(e.message.contains("slot \(bogus.slot) of pool \(bogus.poolID)") && e.message.contains("not held"), "\(e.message)")
        // Then the connection closes. Output events the worker was sending meanwhile (a Sample, a PoolAdded) may
        // still come first; nothing comes after the close.
        var closed = false
        for _ in 0..<1000 {
            guard (try? raw.socket.receive()) != nil else {  // (each frame closes its descriptors as it goes)
                closed = true
                break
            }
        }
        #expect(closed, "the connection stayed open after the Error")
        // The worker exits normally once the connection is closed: `finished`, not a signal nor an exit status (how a
        // worker ended is in the supervisor's `worker-ended` record only). It is the only worker that ended.
        #expect(daemon.waitForEvents("worker-ended").map { $0["how"] } == ["finished"], "\(daemon.log)")
        try expectNoWorkerCrash(daemon)
    }
}
