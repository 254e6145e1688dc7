import CTrackSys
import Protocol
import Synchronization
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// Accepting connections: the peer's credentials, the connection limits, and the hand-off to a worker.
extension Supervisor {
    /// Blocking accept on a dedicated thread.
    func acceptLoop() {
        while true {
            let connection: FileDescriptor
            do {
                connection = try listener.descriptor.accept()
            } catch {
                if error.errno == ECONNABORTED { continue }
                Log.warning("\(error)")
                usleep(100_000)  // EMFILE/ENFILE/ENOMEM: back off instead of spinning
                continue
            }
            handOff(SharedDescriptor(connection))
        }
    }

    /// Starts a worker for `conn`, or refuses the connection when a connection limit is reached. The supervisor
    /// keeps `conn` in the worker's record (until it reaps the worker); else it is closed when this returns.
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
            if let refusal = refusal(c, uid: uid) {
                c.rejected += 1
                Log.warning("limit: refused connection from uid \(uid) pid \(pid): \(refusal)")
                refuse(conn, refusal)
                return
            }
            guard let slot = c.freeSlots.popLast() else {
                Log.error("no free worker-table slot for uid \(uid) pid \(pid); refusing")
                refuse(conn, "trackd has no room for another connection")
                return
            }
            table.clear(slot)
            let warm = handToWarmWorker(&c, conn: conn, pid: pid, uid: uid, slot: slot)
            let child: pid_t
            do {
                child = try warm?.pid ?? spawnWorker(conn: conn, pid: pid, uid: uid, slot: slot)
            } catch {
                c.freeSlots.append(slot)
                Log.error("cannot start a worker for uid \(uid) pid \(pid): \(error)")
                startWarmWorkerAfterStartUps(&c)  // the warm worker may have been used up
                return
            }
            c.workers[child] = WorkerRecord(uid: uid, clientPID: pid, slot: slot, connection: conn, warmControl: warm?.control)
            // The next warm worker, for the connection after this one: at once when connections come as fast as
            // warm workers start (this one got a warm worker started less than warmBusyMs ago, or none) — a loop of
            // short reads would otherwise wait on every start-up, and the CPUs are busy starting workers anyway;
            // else once this connection has started up.
            let sporadic = warm.map { trackd_monotonic_ms() - $0.startedMs >= Self.warmBusyMs } ?? false
            if !sporadic { c.startingUp.removeAll() }
            startWarmWorkerAfterStartUps(&c, adding: sporadic ? (child, slot) : nil)
            publish(c)
            Log.info("connection from uid \(uid) pid \(pid) → worker \(child)")
        }
    }

    /// Why a connection of `uid` is refused now (a connection limit), or nil.
    private func refusal(_ c: Counters, uid: UInt32) -> String? {
        let open = UInt64(c.workers.count)
        let ofUID = UInt64(c.workers.values.filter { $0.uid == uid }.count)
        if open >= limits.maxConnections {
            return "trackd serves at most \(limits.maxConnections) connections at once; \(open) are open (--max-connections)"
        }
        if ofUID >= limits.maxConnectionsPerUID {
            return "trackd serves at most \(limits.maxConnectionsPerUID) connections per uid; uid \(uid) has \(ofUID) (--max-connections-per-uid)"
        }
        return nil
    }

    /// Tells a refused client why, in one Error frame with request id 0, without ever blocking: the socket is
    /// new, so its send buffer is empty, and MSG_DONTWAIT drops the message rather than wait on a hostile peer.
    private func refuse(_ conn: SharedDescriptor, _ message: String) {
        let frame = Codec.frame(.error(TrackError(.limitExceeded, message)), requestID: 0)
        _ = frame.withUnsafeBytes { send(conn.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
    }
}
