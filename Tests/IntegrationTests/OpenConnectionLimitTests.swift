import CTrackSys
import Foundation
import Synchronization
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// Issue #16: the connection limits count what is open. A connection stops counting against its uid and the total
/// the moment its client closes it (or its worker is reaped), whichever is first — so clients that never have more
/// connections alive than the limit are never refused, and one past the limit still is.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct OpenConnectionLimitTests {
    static let perUID = 16

    /// What happened to each connection attempt of the loops.
    final class Tally: Sendable {
        let served = Atomic<Int>(0)
        let refusals = Mutex<[String]>([])
        let failures = Mutex<[String]>([])
    }

    enum Outcome {
        case served(MessageSocket)
        case refused(TrackError)
    }

    /// A connection that has said Hello: its socket once trackd replied HelloReply, or the Error it was refused with.
    static func connect(_ socketPath: String) throws -> Outcome {
        let fd = try UnixSocket.connect(to: socketPath)
        var tv = timeval(tv_sec: 30, tv_usec: 0)  // the harness's bound, never a measured time
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let socket = MessageSocket(fd: fd)
        try? socket.send(.hello(Hello(clientName: "open-limit")), requestID: 1)  // a refusal may come first
        switch try socket.receive().message {
        case .helloReply: return .served(socket)
        case .error(let e): return .refused(e)
        case let other: throw TrackError(.protocolViolation, "expected HelloReply, got \(other)")
        }
    }

    /// One client's whole life: connect, Hello, GetStatus, close.
    static func shortClient(_ socketPath: String, _ tally: Tally) {
        do {
            switch try connect(socketPath) {
            case .refused(let e): tally.refusals.withLock { $0.append("\(e.code): \(e.message)") }
            case .served(let socket):
                try socket.send(.getStatus, requestID: 2)
                guard case .status = try socket.receive().message else { throw TrackError(.unknown, "no Status") }
                tally.served.add(1, ordering: .relaxed)
                // Closing ends the connection only when no other process holds the socket; a child another test
                // of this process is spawning holds a copy of every descriptor until it execs. shutdown ends it
                // regardless (trackd sees the same POLLHUP as for a close).
                socket.shutdown()
            }
        } catch {
            tally.failures.withLock { $0.append("\(error)") }
        }
    }

    @Test func sequentialClientsWithinThePerUIDLimitAreNeverRefused() throws {
        let daemon = try Daemon(extraArgs: ["--max-connections-per-uid", "\(Self.perUID)"])
        defer { daemon.stop() }
        let tally = Tally()
        let group = DispatchGroup()
        // 16 loops of sequential clients under this uid: never more than 16 connections alive at once. Each loop
        // runs for a few seconds, and at least 3 clients, so that clients close while other workers still run.
        let deadline = ContinuousClock.now + .seconds(4)
        let socketPath = daemon.socketPath
        for _ in 0..<Self.perUID {
            group.enter()
            let thread = Thread {
                var clients = 0
                while clients < 3 || ContinuousClock.now < deadline {
                    Self.shortClient(socketPath, tally)
                    clients += 1
                }
                group.leave()
            }
            thread.start()
        }
        group.wait()
        let served = tally.served.load(ordering: .relaxed)
        let refusals = tally.refusals.withLock { $0 }
        let failures = tally.failures.withLock { $0 }
        #expect(refusals.count == 0, "\(refusals.count) of \(served + refusals.count) refused: \(refusals.prefix(3))")
        #expect(failures.count == 0, "\(failures.prefix(3))")
        #expect(served >= 3 * Self.perUID)
        #expect(try daemon.status().connectionsRefused == 0, "\(daemon.log)")
        #expect(daemon.isRunning)
    }

    @Test func theSeventeenthOpenConnectionIsRefusedAndAClosedOneStopsCountingAtOnce() throws {
        let daemon = try Daemon(extraArgs: ["--max-connections-per-uid", "\(Self.perUID)"])
        defer { daemon.stop() }
        var open: [MessageSocket] = []
        for _ in 0..<Self.perUID {
            guard case .served(let socket) = try Self.connect(daemon.socketPath) else {
                Issue.record("a connection within the limit was refused")
                return
            }
            open.append(socket)
        }
        // The 17th, with 16 open, is refused with −11902 naming the limit.
        guard case .refused(let e) = try Self.connect(daemon.socketPath) else {
            Issue.record("the 17th open connection of one uid was served")
            return
        }
        #expect(e.code == AVErrorCode.limitExceeded.rawValue && e.code == -11902, "\(e)")
        #expect(e.message.contains("at most 16 connections per uid; uid \(getuid()) has 16"), "\(e.message)")
        // A connection its client has closed stops counting at once, while its worker may still be finishing:
        // the next connection, made right after the close with no wait, is served.
        open.removeLast().shutdown()  // and closed (see shortClient)
        guard case .served(let socket) = try Self.connect(daemon.socketPath) else {
            Issue.record("a connection made after one of the 16 closed was refused")
            return
        }
        open.append(socket)
        // …and the limit still holds: 16 are open again.
        guard case .refused = try Self.connect(daemon.socketPath) else {
            Issue.record("a 17th open connection was served after a close")
            return
        }
        // Every open connection still works.
        for socket in open {
            try socket.send(.getStatus, requestID: 2)
            guard case .status = try socket.receive().message else {
                Issue.record("an open connection stopped working")
                return
            }
        }
        #expect(daemon.isRunning)
    }

    /// `trackctl status` as `uid` (setpriv drops the client to that uid and gid: the callers run only as root).
    static func statusAs(_ uid: UInt32, _ daemon: Daemon) throws -> Run {
        try run("/usr/bin/setpriv", ["--reuid", "\(uid)", "--regid", "\(uid)", "--clear-groups",
                                     Env.trackctl, "--socket", daemon.socketPath, "status"])
    }

    @Test(.enabled(if: getuid() == 0, "drops its clients to other uids (setpriv), which only root may do"))
    func eachUIDHasItsOwnLimit() throws {
        let daemon = try Daemon(extraArgs: ["--max-connections-per-uid", "2"])
        defer { daemon.stop() }
        // Other uids must reach the socket (its directory is the test's own).
        chmod((daemon.socketPath as NSString).deletingLastPathComponent, 0o755)
        chmod(daemon.socketPath, 0o666)
        var open: [MessageSocket] = []
        for _ in 0..<2 {
            guard case .served(let socket) = try Self.connect(daemon.socketPath) else {
                Issue.record("a connection of uid 0 within its limit was refused")
                return
            }
            open.append(socket)
        }
        // uid 0 is at its limit: its own next client is refused, naming uid 0…
        let refused = try daemon.trackctl(["status"])
        #expect(refused.status != 0 && refused.stderr.contains("-11902"), "\(refused.stderr)")
        #expect(refused.stderr.contains("uid 0 has 2 (--max-connections-per-uid)"), "\(refused.stderr)")
        // …while three other uids are each served, three times in a row: more clients than their limit, one after
        // another (each closed connection stops counting at once).
        for uid: UInt32 in [1001, 1002, 1003] {
            for _ in 0..<3 {
                let served = try Self.statusAs(uid, daemon)
                #expect(served.status == 0, "uid \(uid): \(served.stderr)")
            }
        }
        #expect(daemon.events("connection-refused") { (1001...1003).contains($0.int("uid") ?? 0) }.isEmpty, "\(daemon.log)")
        #expect(open.count == 2)
    }

    /// The per-uid rate limit: each uid has its own token bucket (here 3 connections at once, then 1 a second). A
    /// uid that has spent its burst is refused with −11905 naming the options, not the open-connection limit's
    /// −11902; another uid is served meanwhile; a refusal takes no token, and the uid is served again once its
    /// bucket refills.
    @Test(.enabled(if: getuid() == 0, "drops its clients to other uids (setpriv), which only root may do"))
    func eachUIDHasItsOwnConnectionRate() throws {
        let daemon = try Daemon(extraArgs: ["--connection-rate-per-uid", "1", "--connection-burst-per-uid", "3"])
        defer { daemon.stop() }
        chmod((daemon.socketPath as NSString).deletingLastPathComponent, 0o755)
        chmod(daemon.socketPath, 0o666)
        // The burst: uid 0 connects three times without waiting for a worker (a token is taken at the hand-off)…
        var burst: [MessageSocket] = []
        for _ in 0..<3 {
            let fd = try UnixSocket.connect(to: daemon.socketPath)
            var tv = timeval(tv_sec: 30, tv_usec: 0)  // the harness's bound, never a measured time
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            burst.append(MessageSocket(fd: fd))
        }
        // …and a fourth right after (connects take milliseconds; the bucket regains one token a second): refused
        // for its rate, with its own code and message.
        guard case .refused(let e) = try Self.connect(daemon.socketPath) else {
            Issue.record("the connection after the burst was served")
            return
        }
        #expect(e.code == AVErrorCode.connectionRateExceeded.rawValue && e.code == -11905, "\(e)")
        #expect(e.message.hasPrefix("uid 0 opens connections faster than trackd allows: at most 1 a second, in bursts of up to 3 (--connection-rate-per-uid, --connection-burst-per-uid); the next is allowed in "),
                "\(e.message)")
        // The burst's three are served.
        for socket in burst {
            try socket.send(.hello(Hello(clientName: "burst")), requestID: 1)
            guard case .helloReply = try socket.receive().message else {
                Issue.record("a connection of the burst was not served")
                return
            }
            socket.shutdown()
        }
        // Another uid has its own bucket.
        let other = try Self.statusAs(1002, daemon)
        #expect(other.status == 0, "\(other.stderr)")
        let otherAgain = try Self.statusAs(1002, daemon)
        #expect(otherAgain.status == 0, "\(otherAgain.stderr)")
        // uid 0 is served again once its bucket has refilled (a refusal took nothing from it).
        #expect(try waitUntil(timeout: .seconds(30), poll: .milliseconds(200)) {
            if case .served(let socket) = try Self.connect(daemon.socketPath) {
                socket.shutdown()
                return true
            }
            return false
        })
        #expect(!daemon.events("connection-refused") { $0.int("uid") == 0 && $0["limit"] == "connection-rate-per-uid" }.isEmpty,
                "\(daemon.log)")
        // Status counts the refusals (this GetStatus's own connection may be refused for its rate too, and count).
        let status = try #require(waitFor(timeout: .seconds(30), poll: .milliseconds(200)) { try? daemon.status() })
        #expect(status.connectionsRateLimited >= 1 && status.connectionsRefused == status.connectionsRateLimited, "\(status)")
        #expect(daemon.events("connection-refused") { $0.int("uid") == 1002 }.isEmpty, "\(daemon.log)")
    }
}
