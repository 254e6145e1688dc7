import CTrackSys
import Foundation
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// Mutation fuzzer over protocol frames against a real trackd (`make fuzz-protocol` runs it longer).
///
/// Each case is one connection: optionally a valid Hello (and a valid OpenAsset, and a valid CreateOutput), then
/// 1–4 fuzzed frames — every message type of both directions encoded by the TrackdProtocol module and then mutated
/// (header length/type/fdCount/requestID/reserved, bit flips, boundary integers, truncation, extension), or fully
/// random — each carrying 0, 1, 2 or 16 descriptors of assorted kinds. After each frame a GetStatus probe must be
/// answered, or the connection must end (an Error −11900 first, best effort); when the bytes sent do not end on a
/// frame boundary the client shuts its write side and the worker must close. A probe unanswered within 5 s also
/// ends the stream; a connection still open `hangSeconds` after its stream ended is a hang and fails the test. Every 25 cases and at the end a normal
/// client must read the whole video track, the supervisor must be alive and its workerCrashes counter must be 0:
/// the decoder is Swift and validates everything, so a worker killed by a malformed frame is a bug (its inputs
/// are saved under .build/fuzz/).
///
/// Environment: FUZZ_SECONDS (explore for that long; make test, without it, runs the first `gateCases` cases),
/// FUZZ_SEED (default: fixed in make test, fresh when FUZZ_SECONDS is set; printed; see TestSeed), FUZZ_CASES
/// (the number of cases, or a cap on an exploring run), FUZZ_VERBOSE (print every case).
@Suite(.serialized, .timeLimit(.minutes(TestLimits.fuzzMinutes)), .endsTheRunIfItHangs)
struct ProtocolFuzzTests {
    static let probeID: UInt32 = 0xFEED_0001
    /// How long a probe (GetStatus after whole frames) is waited for: it may never come (a frame that leaves the
    /// worker waiting for more), so this is short.
    static let timeoutSeconds = 5
    /// How long the worker has to end the connection once the stream has ended: only a hang takes longer. It counts
    /// the worker's start and the valid prefix's work too (on a 2-core machine at load 35 a worker's start alone
    /// took over 30 s), so it is as long as the media fuzzer's per-input bound.
    static let hangSeconds = 60

    /// Descriptors of assorted kinds, made once.
    final class FdKinds {
        var fds: [(String, Int32)] = []
        private var keep: [Int32] = []
        init() throws {
            fds.append(("file", open(Media.faststart, O_RDONLY | O_CLOEXEC)))
            var p: [Int32] = [-1, -1]
            _ = pipe(&p)
            fds.append(("pipe", p[0]))
            keep.append(p[1])
            var s: [Int32] = [-1, -1]
            _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &s)
            fds.append(("socket", s[0]))
            keep.append(s[1])
            let (_, memfd) = try SharedMapping.create(name: "fuzz", size: 4096)
            fds.append(("memfd", memfd))
            fds.append(("devnull", open("/dev/null", O_RDWR | O_CLOEXEC)))
            for (name, fd) in fds { precondition(fd >= 0, "cannot make a \(name) descriptor") }
        }
        deinit { (fds.map(\.1) + keep).forEach { close($0) } }
    }

    /// make test's gate: the first cases of the gate seed, counted, not timed. A time bound ran as many cases as
    /// the machine's speed allowed, so a quiet machine met inputs a loaded one never reached.
    static let gateCases = 40

    struct Config {
        var seconds: Double?  // an exploring run's length; nil in the gate (counted cases)
        var seed: UInt64
        var maxCases: Int
        init() {
            let env = ProcessInfo.processInfo.environment
            seconds = env["FUZZ_SECONDS"].flatMap(Double.init)
            seed = TestSeed.value("FUZZ_SEED", gate: 3_209_114_877, exploring: TestSeed.exploringFuzz)
            maxCases = env["FUZZ_CASES"].flatMap(Int.init) ?? (seconds == nil ? ProtocolFuzzTests.gateCases : .max)
        }

        var bound: String { seconds.map { "\($0) s" } ?? "\(maxCases) cases" }
    }

    @Test func mutatedAndRandomFramesNeverCrashOrHang() throws {
        let config = Config()
        print("fuzz-protocol: seed \(config.seed) (FUZZ_SEED=\(config.seed) reproduces), \(config.bound)")
        let daemon = try Daemon()
        defer { daemon.stop() }
        let kinds = try FdKinds()
        let expectedFrames = try normalRead(daemon)
        #expect(expectedFrames == 30)

        var outcomes: [String: Int] = [:]
        var window: [String] = []  // descriptions of the cases since the last checkpoint
        var cases = 0, frames = 0
        let deadline = config.seconds.map { Date().addingTimeInterval($0) }
        // Exploring: at least 20 cases however slow the machine (unless FUZZ_CASES asks for fewer), then until the
        // deadline. The gate: its count.
        let minCases = min(20, config.maxCases)
        while cases < config.maxCases && (deadline.map { Date() < $0 } ?? true || cases < minCases) {
            cases += 1
            var log: [String] = []
            // Each case draws from a generator of its own, seeded by (run seed, case): a case that ends early (a
            // probe not answered within 5 s on a loaded machine) leaves the next cases' inputs as they were.
            var rng = SplitMix64(seed: config.seed ^ (UInt64(cases) &* 0x9E37_79B9_7F4A_7C15))
            let result = try fuzzConnection(daemon, kinds, &rng, &log, &frames)
            outcomes[result, default: 0] += 1
            if ProcessInfo.processInfo.environment["FUZZ_VERBOSE"] != nil { print("case \(cases): \(result)\n  " + log.joined(separator: "\n  ")) }
            window.append("case \(cases): \(result)\n" + log.joined(separator: "\n"))
            if result == "hang" {
                Issue.record("case \(cases) (seed \(config.seed)) hung:\n\(log.joined(separator: "\n"))")
                break
            }
            if cases % 25 == 0 {
                try checkpoint(daemon, expectedFrames, window, seed: config.seed, cases: cases)
                window.removeAll()
            }
        }
        try checkpoint(daemon, expectedFrames, window, seed: config.seed, cases: cases)
        let summary = outcomes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
        print("fuzz-protocol: seed \(config.seed): \(cases) connections, \(frames) fuzzed frames; outcomes: \(summary); worker crashes: 0")
        // Workers that ended other than normally (non-zero exit, e.g. a failed start) are reported, not failed on.
        let abnormal = daemon.log.split(separator: "\n").filter { $0.contains("exited with status") || $0.contains("cannot enter") }
        if !abnormal.isEmpty { print("fuzz-protocol: workers that did not finish normally:\n" + abnormal.joined(separator: "\n")) }
        #expect(cases >= minCases)
        #expect(daemon.isRunning)
    }

    /// A normal client reads every video frame of `Media.faststart`; returns the count.
    func normalRead(_ daemon: Daemon) throws -> Int {
        let asset = try Asset(path: Media.faststart, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let reader = AssetReader(asset: asset)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: ["PixelFormatType": .string("BGRA")])
        try reader.add(output)
        #expect(try reader.startReading())
        var n = 0
        while try output.copyNextSampleBuffer() != nil { n += 1 }
        #expect(reader.status == .completed)
        return n
    }

    func checkpoint(_ daemon: Daemon, _ expectedFrames: Int, _ window: [String], seed: UInt64, cases: Int) throws {
        #expect(daemon.isRunning, "the supervisor died; log:\n\(daemon.log)")
        try #require(kill(daemon.pid, 0) == 0)
        #expect(try normalRead(daemon) == expectedFrames)
        let asset = try Asset(path: Media.faststart, socketPath: daemon.socketPath)
        var crashes: UInt64 = 0
        // The supervisor counts a crash when it reaps the worker: a crash of the last case shows within 500 ms.
        try waitUntil(timeout: .milliseconds(500)) { crashes = try asset.serverStatus().workerCrashes; return crashes > 0 }
        if crashes > 0 {
            let dir = URL(fileURLWithPath: Env.buildDir).deletingLastPathComponent().appendingPathComponent("fuzz").path
            try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let path = dir + "/crash-seed\(seed)-case\(cases).txt"
            try? window.joined(separator: "\n\n").write(toFile: path, atomically: true, encoding: .utf8)
            Issue.record("\(crashes) worker crash(es) by case \(cases) (seed \(seed)); inputs saved in \(path); log:\n\(daemon.log)")
        }
    }

    // MARK: - One connection

    enum Reply { case status, closed, timeout }

    /// Runs one fuzzed connection; returns its outcome ("replied", "error <code>", "closed", "hang", …).
    func fuzzConnection(_ daemon: Daemon, _ kinds: FdKinds, _ rng: inout SplitMix64, _ log: inout [String],
                        _ frames: inout Int) throws -> String {
        let fd = try UnixSocket.connect(to: daemon.socketPath)
        var tv = timeval(tv_sec: Self.timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let socket = MessageSocket(fd: fd)
        var errors: [Int32] = []
        var brokenReason: String?  // why this client's decoder gave up on the worker's stream, if it did
        var nextID: UInt32 = 1

        /// Reads until the probe's Status, the end of the connection, or the timeout; records Error codes.
        func drain(until id: UInt32?) -> Reply {
            while true {
                do throws(MessageSocket.ReceiveError) {
                    let frame = try socket.receive()
                    if case .error(let e) = frame.message {
                        errors.append(e.code)
                        log.append("  ← Error \(e.code) (request \(frame.requestID)): \(e.message)")
                    }
                    if case .status = frame.message, frame.requestID == id { return .status }
                } catch {
                    if case .broken(let e) = error {
                        if e.message.contains("Resource temporarily unavailable") { return .timeout }
                        brokenReason = e.message
                    }
                    return .closed
                }
            }
        }
        func send(_ bytes: [UInt8], _ fds: [Int32]) -> Bool {
            bytes.withUnsafeBytes { raw in
                fds.withUnsafeBufferPointer { trackd_send_with_fds(fd, raw.baseAddress, raw.count, $0.baseAddress, Int32($0.count)) }
            } == bytes.count  // one sendmsg on a blocking stream socket sends it whole
        }
        func outcome(_ base: String) -> String {
            let end = brokenReason.map { "\(base) (\($0))" } ?? base
            // A violation's −11900 names the outcome even when a reply to an earlier request came after it.
            let code = errors.contains(AVErrorCode.protocolViolation.rawValue) ? AVErrorCode.protocolViolation.rawValue : errors.last
            return code.map { "error \($0) + \(end)" } ?? end
        }

        // A valid prefix, so that fuzzed frames reach every state: before Hello, after Hello, with an asset
        // open, with an output streaming.
        if Int.random(in: 0..<100, using: &rng) < 85 {
            nextID += 1
            guard send(Codec.frame(.hello(Hello(clientName: "fuzz")), requestID: nextID), []) else { return "closed" }
            log.append("valid Hello")
            if Bool.random(using: &rng) {
                nextID += 1
                guard send(Codec.frame(.openAsset(name: "clip.mp4"), requestID: nextID), [kinds.fds[0].1]) else { return "closed" }
                log.append("valid OpenAsset")
                if Bool.random(using: &rng) {
                    nextID += 1
                    let settings: [String: SettingValue]? = Bool.random(using: &rng) ? nil : ["PixelFormatType": .string("BGRA")]
                    let create = CreateOutput(assetID: 1, trackID: 1, timeRange: .everything, settings: settings)
                    guard send(Codec.frame(.createOutput(create), requestID: nextID), []) else { return "closed" }
                    log.append("valid CreateOutput")
                }
            }
        }

        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            frames += 1
            nextID += 1
            let (bytes, description) = fuzzFrame(&rng, requestID: nextID)
            let fdChoice = Int.random(in: 0..<100, using: &rng)
            let fdCount = fdChoice < 55 ? 0 : fdChoice < 80 ? 1 : fdChoice < 92 ? 2 : 16  // 16: the most CTrackSys sends at once; > the 4 a receiver takes
            let fds = (0..<fdCount).map { _ in kinds.fds.randomElement(using: &rng)! }
            log.append("\(description) + fds [\(fds.map(\.0).joined(separator: ","))]: \(hex(bytes))")
            guard send(bytes, fds.map(\.1)) else { return outcome("send failed: \(String(cString: strerror(trackd_errno())))") }
            if endsOnFrameBoundary(bytes) {
                guard send(Codec.frame(.getStatus, requestID: Self.probeID), []) else { return outcome("closed") }
                switch drain(until: Self.probeID) {
                case .status: continue
                case .closed: return outcome("closed")
                case .timeout: break  // e.g. a frame longer than the rest of the bytes: it waits for the rest
                }
            }
            // The worker may be waiting for the rest of a frame: end the stream; it must close.
            _ = Glibc.shutdown(fd, Int32(SHUT_WR))
            var hang = timeval(tv_sec: Self.hangSeconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &hang, socklen_t(MemoryLayout<timeval>.size))
            switch drain(until: nil) {
            case .closed: return outcome("closed after shutdown")
            case .status, .timeout: return "hang"
            }
        }
        return outcome("replied")
    }

    /// True when the frame headers in `bytes` chain exactly to its end, so the worker has whole frames only.
    func endsOnFrameBoundary(_ bytes: [UInt8]) -> Bool {
        var at = 0
        while at + Wire.headerSize <= bytes.count {
            let length = Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
            if length > Int(Wire.maxMessageSizeCeiling) { return true }  // rejected at once, nothing awaited
            at += Wire.headerSize + length
        }
        return at == bytes.count
    }

    func hex(_ bytes: [UInt8]) -> String {
        bytes.prefix(512).map { String(format: "%02x", $0) }.joined() + (bytes.count > 512 ? "…(\(bytes.count) bytes)" : "")
    }

    // MARK: - Inputs

    /// A valid message of a random type (both directions), with plausible and boundary field values.
    func template(_ rng: inout SplitMix64) -> Message {
        func u32() -> UInt32 { [0, 1, 2, 3, 77, UInt32.max, UInt32.random(in: 0...UInt32.max, using: &rng)].randomElement(using: &rng)! }
        func time() -> MediaTime {
            [MediaTime.zero, .positiveInfinity, MediaTime(seconds: 0.5), MediaTime(value: .max, timescale: 1),
             MediaTime(value: -1, timescale: 0), MediaTime(value: 1, timescale: -1, flags: 0xFFFF_FFFF)].randomElement(using: &rng)!
        }
        func range() -> MediaTimeRange { MediaTimeRange(start: time(), duration: time()) }
        let settings: [[String: SettingValue]?] = [
            nil, [:], ["PixelFormatType": .string("BGRA")], ["PixelFormatType": .string("420v"), "Width": .int(64), "Height": .int(48)],
            ["Width": .int(-1)], ["Width": .int(Int64.max)], ["AVFormatIDKey": .string("lpcm"), "AVSampleRateKey": .int(8000)],
            ["Nested": .dictionary(["a": .dictionary(["b": .bool(true)])])],
        ]
        func frameRequests() -> [FrameRequest] {
            (0..<Int.random(in: 0...4, using: &rng)).map { _ in
                Bool.random(using: &rng) ? .time(time()) : .index([0, 1, 59, 60, UInt64.max].randomElement(using: &rng)!)
            }
        }
        switch Int.random(in: 0..<21, using: &rng) {
        case 0: return .hello(Hello(minVersion: UInt16.random(in: 0...2, using: &rng), maxVersion: UInt16.random(in: 0...3, using: &rng),
                                    maxMessageSize: [0, Wire.minMessageSize - 1, Wire.minMessageSize, UInt32.max].randomElement(using: &rng)!,
                                    maxFds: UInt16.random(in: 0...8, using: &rng), clientName: "fuzz"))
        case 1: return .openAsset(name: String(repeating: "é", count: Int.random(in: 0...20, using: &rng)))
        case 2: return .closeAsset(assetID: u32())
        case 3: return .createOutput(CreateOutput(assetID: u32(), trackID: u32(), timeRange: range(),
                                                  settings: settings.randomElement(using: &rng)!, supportsRandomAccess: Bool.random(using: &rng)))
        case 4: return .releaseSlots(outputID: u32(), slots: (0..<Int.random(in: 0...3, using: &rng)).map { _ in SlotRef(poolID: u32(), slot: u32()) })
        case 5: return .cancelOutput(outputID: u32())
        case 6: return .generateImage(GenerateImage(assetID: u32(), trackID: u32(), time: time()))
        case 7: return .getStatus
        case 8: return .resetOutput(outputID: u32(), ranges: (0..<Int.random(in: 0...3, using: &rng)).map { _ in range() })
        case 9: return .finishOutput(outputID: u32())
        // Worker → client types sent by the client: a protocol violation.
        case 10: return .ack
        case 11: return .poolRemoved(outputID: u32(), poolID: u32())
        case 12: return .rangeEnded(outputID: u32())
        case 13: return .error(TrackError(.unknown, "from the client"))
        case 14: return .poolAdded(PoolAdded(outputID: u32(), poolID: u32(), slotCount: u32(), slotSize: UInt64(u32())))
        case 15: return .helloReply(HelloReply(version: 1, maxMessageSize: u32(), maxFds: 4, workerPID: u32(), serverVersion: "x"))
        case 16: return .readFrames(ReadFrames(assetID: u32(), trackID: u32(), frames: frameRequests(),
                                               settings: settings.randomElement(using: &rng)! ?? [:]))
        case 17: return .framesResolved(outputID: u32(), frames: [ResolvedFrame(index: UInt64(u32()), presentationTime: time())])
        case 18: return .countFrames(assetID: u32(), trackID: u32())
        case 19: return .frameCount(trackID: u32(), count: UInt64(u32()))
        default: return .outputFinished(OutputFinished(outputID: u32(), status: .completed))
        }
    }

    /// One fuzzed frame (or, rarely, two back to back) and a description.
    func fuzzFrame(_ rng: inout SplitMix64, requestID: UInt32) -> ([UInt8], String) {
        let kind = Int.random(in: 0..<100, using: &rng)
        if kind < 10 {  // fully random: a random header and 0–300 random payload bytes
            var bytes = (0..<Wire.headerSize + Int.random(in: 0...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if Bool.random(using: &rng) { put32(&bytes, 0, UInt32(bytes.count - Wire.headerSize)) }  // a consistent length
            return (bytes, "random")
        }
        let message = template(&rng)
        var bytes = Codec.frame(message, requestID: requestID)
        if kind < 25 { return (bytes, "valid \(message.type)") }
        if kind < 30 {  // two frames in one write
            let second = template(&rng)
            return (bytes + Codec.frame(second, requestID: requestID &+ 1), "valid \(message.type) + \(second.type)")
        }
        var steps: [String] = []
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            let payload = bytes.count - Wire.headerSize
            switch Int.random(in: 0..<10, using: &rng) {
            case 0:
                let v = [0, 1, UInt32(max(payload - 1, 0)), UInt32(payload + 1), Wire.defaultMaxMessageSize,
                         Wire.defaultMaxMessageSize + 1, Wire.maxMessageSizeCeiling + 1, UInt32.max].randomElement(using: &rng)!
                put32(&bytes, 0, v); steps.append("length=\(v)")
            case 1:
                let t = Bool.random(using: &rng) ? MessageType.allCases.randomElement(using: &rng)!.rawValue : UInt16.random(in: 0...UInt16.max, using: &rng)
                put16(&bytes, 4, t); steps.append("type=\(t)")
            case 2:
                let c = [0, 1, 2, 4, 5, UInt16.max].randomElement(using: &rng)!
                put16(&bytes, 6, c); steps.append("fdCount=\(c)")
            case 3:
                let r = [0, 1, UInt32.max, Self.probeID].randomElement(using: &rng)!
                put32(&bytes, 8, r); steps.append("requestID=\(r)")
            case 4:
                put32(&bytes, 12, UInt32.random(in: 1...UInt32.max, using: &rng)); steps.append("reserved≠0")
            case 5, 6:
                guard payload > 0 else { continue }
                for _ in 0..<Int.random(in: 1...8, using: &rng) {
                    let at = Wire.headerSize + Int.random(in: 0..<payload, using: &rng)
                    bytes[at] ^= 1 << UInt8.random(in: 0...7, using: &rng)
                }
                steps.append("bitflips")
            case 7:
                guard payload >= 4 else { continue }
                let at = Wire.headerSize + Int.random(in: 0...(payload - 4), using: &rng)
                let v = [0, 1, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 0xFFFF, 0x1_0000].randomElement(using: &rng)!
                if Bool.random(using: &rng) { put32(&bytes, at, UInt32(v)) } else { put16(&bytes, at, UInt16(truncatingIfNeeded: v)) }
                steps.append("boundary@\(at - Wire.headerSize)=\(v)")
            case 8:
                guard payload > 0 else { continue }
                let cut = Int.random(in: 0..<payload, using: &rng)
                bytes.removeLast(payload - cut)
                let fix = Bool.random(using: &rng)
                if fix { put32(&bytes, 0, UInt32(cut)) }
                steps.append("truncate to \(cut)\(fix ? " (length fixed)" : "")")
            default:
                let extra = Int.random(in: 1...64, using: &rng)
                bytes += (0..<extra).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let fix = Bool.random(using: &rng)
                if fix { put32(&bytes, 0, UInt32(bytes.count - Wire.headerSize)) }
                steps.append("extend by \(extra)\(fix ? " (length fixed)" : "")")
            }
        }
        return (bytes, "\(message.type) mutated: \(steps.joined(separator: ", "))")
    }

    func put32(_ b: inout [UInt8], _ at: Int, _ v: UInt32) { for i in 0..<4 { b[at + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(i))) } }
    func put16(_ b: inout [UInt8], _ at: Int, _ v: UInt16) { for i in 0..<2 { b[at + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt16(i))) } }
}
