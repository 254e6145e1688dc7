import CTrackSys
import Foundation
import Synchronization
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// Issue #4's limits, each against a real trackd started with a small value: the client that hits a limit gets
/// an explicit error naming it, the daemon logs it, and every other client goes on working.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct LimitsTests {
    /// The harness's bound on any wait for the daemon (never a measured time: a passing run is far quicker).
    static let harnessTimeout: Int = 30

    /// A connected socket with no Hello sent yet, whose receives give up after the harness timeout.
    static func connect(_ daemon: Daemon) throws -> MessageSocket {
        let fd = try UnixSocket.connect(to: daemon.socketPath)
        var tv = timeval(tv_sec: harnessTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        return MessageSocket(fd: fd, maxMessageSize: Wire.maxMessageSizeCeiling)
    }

    /// The next frame, or the receive error (closed, broken, or the harness timeout as a broken recvmsg).
    static func next(_ socket: MessageSocket) -> Result<ReceivedFrame, MessageSocket.ReceiveError> {
        do throws(MessageSocket.ReceiveError) {
            return .success(try socket.receive())
        } catch {
            return .failure(error)
        }
    }

    /// Expects an Error frame with `code` whose message contains every fragment, then the end of the connection.
    static func expectErrorThenClose(_ socket: MessageSocket, _ code: AVErrorCode, _ fragments: [String],
                                     sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .success(let frame) = next(socket), case .error(let e) = frame.message else {
            Issue.record("expected an Error frame", sourceLocation: sourceLocation)
            return
        }
        #expect(e.code == code.rawValue, "\(e)", sourceLocation: sourceLocation)
        for fragment in fragments {
            #expect(e.message.contains(fragment), "\(e.message) lacks \(fragment)", sourceLocation: sourceLocation)
        }
        #expect(frame.requestID == 0, sourceLocation: sourceLocation)
        guard case .failure = next(socket) else {
            Issue.record("the connection stayed open after the error", sourceLocation: sourceLocation)
            return
        }
    }

    /// Another client gets served: it opens the clip and reads every video frame.
    static func anotherClientReads(_ daemon: Daemon, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first, sourceLocation: sourceLocation)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: ["PixelFormatType": .string("420v")])
        let reader = AssetReader(asset: asset)
        try reader.add(output)
        #expect(try reader.startReading(), sourceLocation: sourceLocation)
        var frames = 0
        while try output.copyNextSampleBuffer() != nil { frames += 1 }
        #expect(frames == 60, "\(String(describing: reader.error))", sourceLocation: sourceLocation)
    }

    static func openError(_ daemon: Daemon) -> TrackError? {
        do {
            _ = try Asset(path: Media.clip, socketPath: daemon.socketPath)
            return nil
        } catch {
            return error
        }
    }

    static func pid(of raw: RawClient) throws -> pid_t {
        guard case .status(let status) = try raw.request(.getStatus) else { throw TrackError(.unknown, "no Status") }
        return pid_t(status.workerPID)
    }

    static func isAlive(_ pid: pid_t) -> Bool { kill(pid, 0) == 0 }

    /// The State line of /proc/<pid>/status and the wait channels of its threads, for failure messages.
    static func processState(_ pid: pid_t) -> String {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let state = status.split(separator: "\n").first { $0.hasPrefix("State:") }.map(String.init) ?? "gone"
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        let channels = tasks.map { ((try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/wchan", encoding: .utf8)) ?? "?") }
        return "\(state); threads waiting in \(channels.joined(separator: ", "))"
    }

    // MARK: - Connections

    // The client's side of each limit is asserted on the replies. The daemon's side on its event records (beside
    // the `limit: …` log lines): an operator learns of a timeout from the journal only (Status counts refusals).

    @Test func connectionsInTotal() throws {
        let daemon = try Daemon(extraArgs: ["--max-connections", "2"])
        defer { daemon.stop() }
        var first: RawClient? = try RawClient(socketPath: daemon.socketPath)
        let second = try RawClient(socketPath: daemon.socketPath)
        // The third is refused by the supervisor, with an Error (request id 0) in place of HelloReply.
        let refused = try Self.connect(daemon)
        try? refused.send(.hello(Hello(clientName: "third")), requestID: 1)  // may fail: the refusal can come first
        Self.expectErrorThenClose(refused, .limitExceeded, ["at most 2 connections at once", "--max-connections"])
        // TrackClient reports the same to its caller.
        let error = try #require(Self.openError(daemon))
        #expect(error.code == AVErrorCode.limitExceeded.rawValue, "\(error)")
        #expect(error.message.contains("--max-connections"), "\(error)")
        // (The supervisor writes its record before it answers the refused client.)
        #expect(daemon.events("connection-refused") { $0.int("uid") == Int(getuid()) }.map { $0["limit"] }
                    == ["max-connections", "max-connections"], "\(daemon.log)")
        // The two served clients are unaffected.
        guard case .status = try second.request(.getStatus), case .status = try first!.request(.getStatus) else {
            Issue.record("a served client stopped working")
            return
        }
        // When one leaves, its place is free again (once the supervisor has reaped its worker).
        first = nil
        #expect(waitUntil { Self.openError(daemon) == nil })
        #expect(daemon.isRunning)
    }

    @Test func connectionsPerUID() throws {
        let daemon = try Daemon(extraArgs: ["--max-connections-per-uid", "1"])
        defer { daemon.stop() }
        let served = try RawClient(socketPath: daemon.socketPath)
        let error = try #require(Self.openError(daemon))
        #expect(error.code == AVErrorCode.limitExceeded.rawValue, "\(error)")
        #expect(error.message.contains("at most 1 connections per uid; uid \(getuid()) has 1 (--max-connections-per-uid)"), "\(error.message)")
        #expect(daemon.events("connection-refused") { $0.int("uid") == Int(getuid()) }.map { $0["limit"] }
                    == ["max-connections-per-uid"], "\(daemon.log)")
        _ = try served.openAsset(Media.clip)
    }

    @Test func badLimitValuesAreRefused() throws {
        for (option, value) in [("--max-connections", "0"), ("--pool-bytes-total", "1000"), ("--watchdog", "x"),
                                ("--handshake-timeout", "0")] {
            let r = try run(Env.trackd, ["--socket", "/nonexistent/trackd.sock", option, value])
            #expect(r.status == 2, "\(option) \(value)")
            #expect(r.stderr.contains("\(option) needs a whole number from"), "\(r.stderr)")
        }
        let help = try run(Env.trackd, ["--help"])
        for option in ["--max-connections N", "--max-connections-per-uid N", "--handshake-timeout N", "--idle-timeout N",
                       "--pool-bytes-per-client N", "--pool-bytes-total N", "--watchdog N"] {
            #expect(help.text.contains(option), "--help lacks \(option)")
        }
        #expect(help.text.contains("(default 536870912)") && help.text.contains("(default 900)"))
    }

    // MARK: - Messages and descriptors

    /// A frame longer than the size agreed in Hello is a protocol violation, refused from its header alone.
    @Test func messageSize() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawClient(socketPath: daemon.socketPath)
        var header = ByteWriter()
        FrameHeader(length: Wire.defaultMaxMessageSize + 1, type: MessageType.getStatus.rawValue, fdCount: 0, requestID: 7)
            .encode(into: &header)
        #expect(header.bytes.withUnsafeBytes { write(raw.socket.fd, $0.baseAddress, $0.count) } == 16)
        Self.expectErrorThenClose(raw.socket, .protocolViolation, ["exceeds the limit of \(Wire.defaultMaxMessageSize)"])
        try Self.anotherClientReads(daemon)
    }

    /// Exactly the descriptors a message type carries: one too many in a frame, one missing, and more than the
    /// worker accepts in one message (MSG_CTRUNC) each end the session with −11900; others are unaffected.
    @Test func descriptorsPerMessage() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let media = open(Media.clip, O_RDONLY | O_CLOEXEC)
        defer { close(media) }
        func sendRaw(_ socket: MessageSocket, _ bytes: [UInt8], fds: [Int32]) {
            let rc = bytes.withUnsafeBytes { raw in
                fds.withUnsafeBufferPointer { trackd_send_with_fds(socket.fd, raw.baseAddress, raw.count, $0.baseAddress, Int32(fds.count)) }
            }
            #expect(rc == bytes.count)  // one sendmsg on a blocking stream socket sends it whole
        }
        // A descriptor attached to GetStatus (which declares none): answered, then the session ends.
        let extra = try RawClient(socketPath: daemon.socketPath)
        sendRaw(extra.socket, Codec.frame(.getStatus, requestID: 5), fds: [media])
        guard case .success(let status) = Self.next(extra.socket), case .status = status.message else {
            Issue.record("GetStatus was not answered")
            return
        }
        Self.expectErrorThenClose(extra.socket, .protocolViolation, ["descriptors no message claims"])
        // OpenAsset without its descriptor.
        let missing = try RawClient(socketPath: daemon.socketPath)
        sendRaw(missing.socket, Codec.frame(.openAsset(name: "x"), requestID: 5), fds: [])
        Self.expectErrorThenClose(missing.socket, .protocolViolation, ["declares 1 descriptors but 0 arrived"])
        // Five descriptors in one message: more than the worker's control buffer holds.
        let truncated = try RawClient(socketPath: daemon.socketPath)
        var opening = Codec.frame(.openAsset(name: "x"), requestID: 5)
        opening[6] = 1
        sendRaw(truncated.socket, opening, fds: [media, media, media, media, media])
        Self.expectErrorThenClose(truncated.socket, .protocolViolation, ["MSG_CTRUNC"])
        try Self.anotherClientReads(daemon)
    }

    // MARK: - Timeouts

    /// No complete Hello in time: closed with −11902 naming the handshake timeout, whether nothing arrived, part
    /// of a frame arrived, or the Hello trickles in a byte at a time (slow loris). Meanwhile another client is
    /// served in full: each connection has its own worker.
    @Test func handshakeTimeoutAndSlowLoris() throws {
        let daemon = try Daemon(extraArgs: ["--handshake-timeout", "2"])
        defer { daemon.stop() }
        let silent = try Self.connect(daemon)
        let partial = try Self.connect(daemon)
        let hello = Codec.frame(.hello(Hello(clientName: "loris")), requestID: 1)
        #expect(hello.withUnsafeBytes { write(partial.fd, $0.baseAddress, 5) } == 5)
        // While the two stall, a third client is served from start to end.
        try Self.anotherClientReads(daemon)
        Self.expectErrorThenClose(silent, .limitExceeded, ["no complete Hello within 2 s", "--handshake-timeout 2", "nothing arrived"])
        Self.expectErrorThenClose(partial, .limitExceeded, ["no complete Hello within 2 s", "5 bytes of it arrived"])
        // One byte every 100 ms, never a whole Hello: the deadline still holds.
        let trickle = try Self.connect(daemon)
        var sent = 0
        var readable = false
        while !readable && sent < hello.count - 1 && sent < 600 {
            _ = hello.withUnsafeBytes { send(trickle.fd, $0.baseAddress! + sent, 1, Int32(MSG_NOSIGNAL)) }
            sent += 1
            var pfd = pollfd(fd: trickle.fd, events: Int16(POLLIN), revents: 0)
            readable = poll(&pfd, 1, 100) > 0
        }
        #expect(readable, "the trickling client was never answered")
        Self.expectErrorThenClose(trickle, .limitExceeded, ["no complete Hello within 2 s", "bytes of it arrived"])
        #expect(!daemon.events("limit") { $0["kind"] == "handshake-timeout" }.isEmpty, "\(daemon.log)")
    }

    /// After Hello, a session that sends nothing (or half a frame) while nothing is in progress is closed with
    /// −11902 naming the idle timeout; one whose output is still being read is not.
    @Test func idleTimeout() throws {
        let daemon = try Daemon(extraArgs: ["--idle-timeout", "1"])
        defer { daemon.stop() }
        let idle = try RawClient(socketPath: daemon.socketPath)
        let partial = try RawClient(socketPath: daemon.socketPath)
        #expect(Codec.frame(.getStatus, requestID: 9).withUnsafeBytes { write(partial.socket.fd, $0.baseAddress, 8) } == 8)
        Self.expectErrorThenClose(idle.socket, .limitExceeded, ["no complete message from the client for 1 s", "--idle-timeout 1"])
        Self.expectErrorThenClose(partial.socket, .limitExceeded, ["8 bytes of an incomplete message are pending", "--idle-timeout 1"])
        #expect(daemon.events("limit") { $0["kind"] == "idle-timeout" }.count == 2, "\(daemon.log)")
        // A reader that keeps releasing slots is never idle, even when the whole read takes longer than 1 s.
        try Self.anotherClientReads(daemon)
    }

    // MARK: - Shared memory

    /// Creates a decoded 420v output of the clip's video track and returns its request id. Frames of other
    /// outputs that arrive before the reply are dropped.
    static func createOutput(_ raw: RawClient, asset: UInt32) throws -> (rid: UInt32, outputID: UInt32) {
        raw.nextID += 1
        let rid = raw.nextID
        try raw.socket.send(.createOutput(CreateOutput(assetID: asset, trackID: 1, timeRange: .everything,
                                                       settings: ["PixelFormatType": .string("v210")])), requestID: rid)
        while true {
            let frame = try raw.socket.receive()
            guard frame.requestID == rid else { continue }
            guard case .outputCreated(let created) = frame.message else {
                throw TrackError(.unknown, "expected OutputCreated, got \(frame.message)")
            }
            return (rid, created.outputID)
        }
    }

    /// Reads frames until the output started by `rid` adds a pool or finishes; samples are kept (not released).
    static func firstPoolOrFinish(_ raw: RawClient, rid: UInt32) throws -> Message {
        while true {
            let frame = try raw.socket.receive()
            guard frame.requestID == rid else { continue }
            switch frame.message {
            case .poolAdded, .outputFinished: return frame.message
            default: continue
            }
        }
    }

    /// Pools of one connection are bounded: the second output's pool would pass --pool-bytes-per-client, so
    /// that output fails with −11902 while the first goes on and other connections are unaffected.
    @Test func poolBytesPerClient() throws {
        // v210 frames are copied (their row padding is cleared) into a copy pool: at 320×240, 8 slots of 217,088
        // bytes = 1,736,704 bytes; two do not fit in 2.5 MB.
        let daemon = try Daemon(extraArgs: ["--pool-bytes-per-client", "2500000"])
        defer { daemon.stop() }
        let raw = try RawClient(socketPath: daemon.socketPath)
        let asset = try raw.openAsset(Media.clip).assetID
        let first = try Self.createOutput(raw, asset: asset)
        guard case .poolAdded(let pool) = try Self.firstPoolOrFinish(raw, rid: first.rid) else {
            Issue.record("the first output got no pool")
            return
        }
        #expect(pool.slotSize * UInt64(pool.slotCount) == 1_736_704)
        let second = try Self.createOutput(raw, asset: asset)
        guard case .outputFinished(let finished) = try Self.firstPoolOrFinish(raw, rid: second.rid) else {
            Issue.record("the second output got a pool past the limit")
            return
        }
        #expect(finished.status == .failed && finished.code == AVErrorCode.limitExceeded.rawValue)
        #expect(finished.message.contains("--pool-bytes-per-client 2500000"), "\(finished.message)")
        #expect(finished.message.contains("already has 1736704 bytes in pools"), "\(finished.message)")
        // The session and its first output are fine: releasing a slot brings the next sample.
        try raw.socket.send(.releaseSlots(outputID: first.outputID, slots: [SlotRef(poolID: pool.poolID, slot: 0)]), requestID: 0)
        var sampled = false
        while !sampled {
            let frame = try raw.socket.receive()
            if frame.requestID == first.rid, case .sample = frame.message { sampled = true }
            if case .error(let e) = frame.message { throw e }
        }
        try raw.socket.send(.cancelOutput(outputID: first.outputID), requestID: 0)
        try Self.anotherClientReads(daemon)
    }

    /// Pools of all connections together are bounded; when the connection holding them leaves, the supervisor
    /// returns its bytes and another connection's output gets its pool.
    @Test func poolBytesInTotal() throws {
        let daemon = try Daemon(extraArgs: ["--pool-bytes-total", "2500000"])
        defer { daemon.stop() }
        var holder: RawClient? = try RawClient(socketPath: daemon.socketPath)
        let holderPID = try Self.pid(of: holder!)
        let held = try Self.createOutput(holder!, asset: try holder!.openAsset(Media.clip).assetID)
        guard case .poolAdded = try Self.firstPoolOrFinish(holder!, rid: held.rid) else {
            Issue.record("the first client got no pool")
            return
        }
        let other = try RawClient(socketPath: daemon.socketPath)
        let asset = try other.openAsset(Media.clip).assetID
        let refused = try Self.createOutput(other, asset: asset)
        guard case .outputFinished(let finished) = try Self.firstPoolOrFinish(other, rid: refused.rid) else {
            Issue.record("the second client got a pool past the total limit")
            return
        }
        #expect(finished.status == .failed && finished.code == AVErrorCode.limitExceeded.rawValue)
        #expect(finished.message.contains("--pool-bytes-total 2500000"), "\(finished.message)")
        #expect(!daemon.events("limit") { $0["kind"] == "output" }.isEmpty, "\(daemon.log)")
        // The first client leaves; its worker ends and its bytes are returned.
        holder = nil
        #expect(waitUntil { !Self.isAlive(holderPID) }, "worker \(holderPID) lives on: \(Self.processState(holderPID))\n\(daemon.log)")
        // Its bytes return when the supervisor reaps it: retried until then.
        let got = try waitUntil(timeout: .seconds(5), poll: .milliseconds(100)) {
            let retry = try Self.createOutput(other, asset: asset)
            if case .poolAdded = try Self.firstPoolOrFinish(other, rid: retry.rid) { return true }
            return false
        }
        #expect(got, "no pool after the first client left")
    }

    /// A client that sends requests and never reads the replies: the worker blocks in send (nothing queues in
    /// its memory), so the client soon cannot send more, and the worker's resident memory stays put.
    @Test func clientThatStopsReadingCannotGrowTheWorker() throws {
        let daemon = try Daemon(extraArgs: ["--watchdog", "0"])
        defer { daemon.stop() }
        let raw = try RawClient(socketPath: daemon.socketPath)
        let pid = try Self.pid(of: raw)
        func rssKiB() -> Int? {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
            return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
        }
        let before = try #require(rssKiB())
        let request = Codec.frame(.getStatus, requestID: 3)
        let flags = fcntl(raw.socket.fd, F_GETFL)
        _ = fcntl(raw.socket.fd, F_SETFL, flags | O_NONBLOCK)
        var sent = 0
        var refusals = 0
        let cap = 64 << 20  // what the client could push if the worker kept taking requests
        while sent < cap && refusals < 20 {
            let n = request.withUnsafeBytes { send(raw.socket.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                sent += n
                refusals = 0
            } else {
                // Refused: wait for room (at most 50 ms); 20 waits in a row without room is a blocked worker.
                refusals += 1
                var room = pollfd(fd: raw.socket.fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&room, 1, 50)
            }
        }
        #expect(sent < cap, "the worker kept accepting requests it could not answer")
        let after = try #require(rssKiB())
        #expect(after - before < 16 * 1024, "worker RSS grew from \(before) KiB to \(after) KiB")
        #expect(Self.isAlive(pid))
        try Self.anotherClientReads(daemon)
    }

    // MARK: - Watchdog

    /// Under systemd's WatchdogSec= (WATCHDOG_USEC in the environment), the supervisor sends READY=1 and then
    /// WATCHDOG=1 repeatedly to NOTIFY_SOCKET through sd_notify. The test plays systemd's part.
    @Test func systemdWatchdogPings() throws {
        let dir = Env.tempDir("notify")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/notify.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes.prefix(raw.count - 1))
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        var tv = timeval(tv_sec: Self.harnessTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let daemon = try Daemon(env: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"])
        defer { daemon.stop() }
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while messages.filter({ $0 == "WATCHDOG=1" }).count < 3 {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { break }
            messages.append(String(decoding: buffer[..<n], as: UTF8.self))
        }
        #expect(messages.first?.hasPrefix("READY=1") == true, "\(messages)")
        #expect(messages.filter { $0 == "WATCHDOG=1" }.count == 3, "\(messages)")
        #expect(daemon.events("systemd-watchdog").map { $0.int("interval-ms") } == [100], "\(daemon.log)")
    }

    /// A worker that stops reading its client while the client waits (here: SIGSTOP while the client holds every slot,
    /// then a ReleaseSlots it cannot read) is killed by the watchdog. Once it is gone the supervisor ends the session
    /// with one Error frame — request id 0, −11819, naming the watchdog — not a hang, and the daemon serves on. The
    /// worker is stopped only when all its threads sleep (it waits for a slot), so it was not writing a frame: the
    /// supervisor adds its Error only between frames.
    @Test func watchdogKillsAStalledWorker() throws {
        let daemon = try Daemon(extraArgs: ["--watchdog", "2"])
        defer { daemon.stop() }
        let raw = try RawClient(socketPath: daemon.socketPath)
        let worker = try Self.pid(of: raw)
        let created = try Self.createOutput(raw, asset: try raw.openAsset(Media.clip).assetID)
        let held = try Self.holdEverySlot(raw)
        #expect(waitUntil { Self.allThreadsSleep(worker) }, "\(Self.processState(worker))")
        kill(worker, SIGSTOP)
        try raw.socket.send(.releaseSlots(outputID: created.outputID, slots: held), requestID: 0)
        var ending: TrackError?
        while case .success(let frame) = Self.next(raw.socket) {
            if case .error(let e) = frame.message, frame.requestID == 0 { ending = e }
        }
        let error = try #require(ending, "no Error frame before the end: \(daemon.log)")
        #expect(error.code == AVErrorCode.mediaServicesWereReset.rawValue, "\(error)")
        #expect(error.message.hasPrefix("the trackd worker serving this connection stopped making progress for 2 s; trackd's watchdog ended it (it has left "),
                "\(error.message)")
        // A worker the supervisor kills is not a crash: Status counts it as a watchdog kill.
        #expect(daemon.waitForEvents("watchdog-kill").map { $0.int("worker") } == [Int(worker)], "\(daemon.log)")
        let status = try daemon.status()
        #expect(status.watchdogKills == 1 && status.workerCrashes == 0, "\(status)")
        try Self.anotherClientReads(daemon)
    }

    /// Reads an output's frames until the client holds every slot of its pool (the worker then waits for one).
    static func holdEverySlot(_ raw: RawClient) throws -> [SlotRef] {
        var slotCount = 0
        var held: [SlotRef] = []
        while slotCount == 0 || held.count < slotCount {
            let frame = try raw.socket.receive()
            switch frame.message {
            case .poolAdded(let pool): slotCount = Int(pool.slotCount)
            case .sample(let sample): held.append(sample.slot)
            default: break
            }
        }
        return held
    }

    /// Every thread of `pid` is sleeping (state S in /proc/<pid>/task/*/stat).
    static func allThreadsSleep(_ pid: pid_t) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return !tasks.isEmpty && tasks.allSatisfy { task in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            return stat[stat.index(after: close)...].split(separator: " ").first == "S"
        }
    }

    /// Waiting on the client is not a stall: a worker whose client holds every slot of an output, or says
    /// nothing, for longer than the watchdog's limit lives on and carries on where it stopped.
    @Test func watchdogSparesWorkersThatWaitForTheirClient() throws {
        let daemon = try Daemon(extraArgs: ["--watchdog", "1"])
        defer { daemon.stop() }
        let idle = try RawClient(socketPath: daemon.socketPath)
        let raw = try RawClient(socketPath: daemon.socketPath)
        let workers = [try Self.pid(of: idle), try Self.pid(of: raw)]
        let created = try Self.createOutput(raw, asset: try raw.openAsset(Media.clip).assetID)
        let held = try Self.holdEverySlot(raw)
        // Three times the watchdog's limit, holding every slot: both workers live throughout.
        #expect(holds(for: .seconds(3), poll: .milliseconds(100)) { workers.allSatisfy(Self.isAlive) })
        try raw.socket.send(.releaseSlots(outputID: created.outputID, slots: held), requestID: 0)
        var more = 0
        while more < 5 {
            let frame = try raw.socket.receive()
            if case .sample = frame.message { more += 1 }
        }
        guard case .status = try idle.request(.getStatus) else {
            Issue.record("the idle client's worker stopped answering")
            return
        }
        #expect(try daemon.status().watchdogKills == 0, "\(daemon.log)")
    }
}
