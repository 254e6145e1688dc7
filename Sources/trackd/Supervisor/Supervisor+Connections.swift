import CTrackSys
import TrackdProtocol
import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// Accepting connections: the peer's credentials, the connection limits, and the hand-off to a worker.
extension Supervisor {
    /// The accept thread: waits for a connection (poll), then, holding `acceptGate`, takes it (a non-blocking
    /// accept: the listening socket is non-blocking, see `start`) and hands it off — unless trackd is stopping, when
    /// the thread ends and leaves the queue alone.
    func acceptLoop() {
        while true {
            guard let events = listener.descriptor.poll(Int16(POLLIN), timeoutMs: -1), events != 0 else { continue }
            var failure: SystemError?
            let stopping = acceptGate.withLock { stopping -> Bool in
                guard !stopping else { return true }
                do throws(SystemError) {
                    handOff(SharedDescriptor(try listener.descriptor.accept()))
                } catch {
                    if error.errno != EAGAIN && error.errno != ECONNABORTED { failure = error }
                }
                return false
            }
            if stopping { return }
            if let failure {
                Log.warning("\(failure)")
                usleep(100_000)  // EMFILE/ENFILE/ENOMEM: back off instead of spinning
            }
        }
    }

    /// Starts a worker for `conn`, or refuses the connection when a connection limit is reached. The supervisor
    /// keeps `conn` in the worker's record (until it reaps the worker); else it is closed when this returns.
    /// The worker table has room for twice `--max-connections` workers: a worker whose client has closed its
    /// connection no longer counts against the limits but keeps its slot until it is reaped.
    private func handOff(_ conn: SharedDescriptor) {
        let peer: (pid: Int32, uid: UInt32, gid: UInt32)
        do {
            peer = try conn.descriptor.peerCredentials()
        } catch {
            Log.warning("\(error); dropping connection")
            return
        }
        let (pid, uid) = (peer.pid, peer.uid)
        // The counters lock is held across the limit check, spawn and registration so reap() cannot miss a
        // fast-dying worker and two connections cannot both take the last place.
        counters.withLock { c in
            c.accepted += 1
            guard !c.stopping else {
                tell(conn, TrackError(.daemonStopping, Self.stoppingMessage))
                return
            }
            // A client that has already gone costs no worker (a burst of connect-and-close must not start one each).
            if SharedDescriptor.hungUp([conn])[0] {
                Log.info("connection from uid \(uid) pid \(pid) closed before it was served; no worker started")
                return
            }
            if let (refusal, limit) = refusal(&c, uid: uid) {
                c.rejected += 1
                if refusal.knownCode == .connectionRateExceeded { c.rateLimited += 1 }
                Log.warning("limit: refused connection from uid \(uid) pid \(pid): \(refusal.message)")
                Event.connectionRefused(uid: uid, pid: pid, limit: limit).emit()
                tell(conn, refusal)
                return
            }
            let waiting = PendingConnection(connection: conn, uid: uid, clientPID: pid)
            if c.pending.isEmpty && processes(c) < processBound {
                serve(&c, waiting)
            } else {
                c.pending.append(waiting)
                Log.info("connection from uid \(uid) pid \(pid) waits for a worker: \(processes(c)) worker processes are running or ending (at most \(processBound))")
            }
            publish(c)
            wakeHangUpThread()
        }
    }

    /// Starts (or hands the warm worker) the worker of an accepted connection. Call with the counters locked.
    func serve(_ c: inout Counters, _ conn: PendingConnection) {
        let (pid, uid) = (conn.clientPID, conn.uid)
        guard let slot = c.freeSlots.popLast() else {
            Log.error("no free worker-table slot for uid \(uid) pid \(pid); refusing")
            tell(conn.connection, TrackError(.limitExceeded, "trackd has no room for another connection"))
            return
        }
        table.clear(slot)
        let warm = handToWarmWorker(&c, conn: conn.connection, pid: pid, uid: uid, slot: slot)
        let child: pid_t
        do {
            child = try warm?.pid ?? spawnWorker(conn: conn.connection, pid: pid, uid: uid, slot: slot)
        } catch {
            c.freeSlots.append(slot)
            Log.error("cannot start a worker for uid \(uid) pid \(pid): \(error)")
            startWarmWorkerAfterStartUps(&c)  // the warm worker may have been used up
            return
        }
        c.workers[child] = WorkerRecord(uid: uid, clientPID: pid, slot: slot, connection: conn.connection,
                                        warmControl: warm?.control)
        // The next warm worker, for the connection after this one: at once when connections come as fast as
        // warm workers start (this one got a warm worker started less than warmBusyMs ago, or none) — a loop of
        // short reads would otherwise wait on every start-up, and the CPUs are busy starting workers anyway;
        // else once this connection has started up.
        let sporadic = warm.map { trackd_monotonic_ms() - $0.startedMs >= Self.warmBusyMs } ?? false
        if !sporadic { c.startingUp.removeAll() }
        startWarmWorkerAfterStartUps(&c, adding: sporadic ? (child, slot) : nil)
        Log.info("connection from uid \(uid) pid \(pid) → worker \(child)")
        Event.connectionServed(uid: uid, pid: pid, worker: child).emit()
    }

    /// Why a connection of `uid` is refused now (a connection limit, then the uid's connection rate) and the option
    /// that sets that limit, or nil. A connection counts while it is open: from its hand-off until its client
    /// closes it (seen here, at once) or its worker is reaped, whichever is first. Each count is derived from the
    /// records, so none can be taken off twice.
    private func refusal(_ c: inout Counters, uid: UInt32) -> (TrackError, limit: String)? {
        if let (message, limit) = openLimitRefusal(&c, uid: uid) { return (TrackError(.limitExceeded, message), limit) }
        let (rate, burst) = (limits.connectionRatePerUID, limits.connectionBurstPerUID)
        guard let waitMs = c.connectionRate.take(uid: uid, nowMs: trackd_monotonic_ms(), rate: rate, burst: burst) else {
            return nil
        }
        return (TrackError(.connectionRateExceeded,
                           "uid \(uid) opens connections faster than trackd allows: at most \(rate) a second, in bursts of up to \(burst) (--connection-rate-per-uid, --connection-burst-per-uid); the next is allowed in \(waitMs) ms"), "connection-rate-per-uid")
    }

    private func openLimitRefusal(_ c: inout Counters, uid: UInt32) -> (String, limit: String)? {
        var (open, ofUID) = openConnections(c, uid: uid)
        if open >= limits.maxConnections || ofUID >= limits.maxConnectionsPerUID {
            markClosedConnections(&c)
            (open, ofUID) = openConnections(c, uid: uid)
        }
        if open >= limits.maxConnections {
            return ("trackd serves at most \(limits.maxConnections) connections at once; \(open) are open (--max-connections)",
                    "max-connections")
        }
        if ofUID >= limits.maxConnectionsPerUID {
            return ("trackd serves at most \(limits.maxConnectionsPerUID) connections per uid; uid \(uid) has \(ofUID) (--max-connections-per-uid)",
                    "max-connections-per-uid")
        }
        return nil
    }

    /// The connections still open in all, and of `uid`.
    private func openConnections(_ c: Counters, uid: UInt32) -> (all: UInt64, ofUID: UInt64) {
        var (all, ofUID): (UInt64, UInt64) = (0, 0)
        for record in c.workers.values where !record.peerClosed {
            all += 1
            if record.uid == uid { ofUID += 1 }
        }
        for waiting in c.pending {
            all += 1
            if waiting.uid == uid { ofUID += 1 }
        }
        return (all, ofUID)
    }

    /// Marks every connection whose client has closed it (POLLHUP on the supervisor's copy: the kernel sets it
    /// when the peer's last descriptor closes, so a client that closed before connecting again is seen here).
    /// The worker may still be finishing; its record, slot and copy stay until it is reaped.
    func markClosedConnections(_ c: inout Counters) {
        let now = trackd_monotonic_ms()
        let pids = c.workers.filter { !$0.value.peerClosed }.map(\.key)
        let hungUp = SharedDescriptor.hungUp(pids.map { c.workers[$0]!.connection })
        for (pid, closed) in zip(pids, hungUp) where closed {
            c.workers[pid]!.peerClosed = true
            c.workers[pid]!.closedAtMs = now
        }
        let gone = SharedDescriptor.hungUp(c.pending.map(\.connection))
        c.pending = zip(c.pending, gone).filter { !$0.1 }.map(\.0)
    }

    /// Tells a refused client why, in one Error frame with request id 0, without ever blocking: the socket is
    /// new, so its send buffer is empty, and MSG_DONTWAIT drops the message rather than wait on a hostile peer.
    /// One Error frame with request id 0 on `conn`, never blocking (MSG_DONTWAIT: a frame this small is queued
    /// whole or not at all). Only for a connection that is between frames: new, or its worker gone.
    func tell(_ conn: SharedDescriptor, _ error: TrackError) {
        let frame = Codec.frame(.error(error), requestID: 0)
        conn.descriptor.sendWithoutWaiting(frame)
    }
}
