import CTrackSys
import Foundation
import Synchronization
import SystemCalls
import TrackdProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Ending workers: reaping (SIGCHLD, and once a second as a backstop) and the watchdog that kills a stuck one.
extension Supervisor {
    /// Reaps every worker that has ended, logs how, and returns its slot and connection — or, for a warm worker
    /// that died before it was ready, hands its connection to a new worker.
    func reap() {
        while let ended = reapEndedChild() {
            let (pid, status, usage) = (ended.pid, ended.status, ended.usage)
            // Peak resident memory (KiB): GStreamer, the pipeline and every pool page the worker touched; CPU time.
            let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
                + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
            let rssMiB = usage.ru_maxrss / 1024
            let peak = "max RSS \(rssMiB) MiB, CPU \(String(format: "%.2f", cpu)) s"
            var restartedOn: pid_t?
            var killedUnused = false
            let record = counters.withLock { c -> WorkerRecord? in
                if let warm = c.warm, warm.pid == pid { c.warm = nil }  // died before it had a connection; the next handOff starts one
                killedUnused = c.ending.remove(pid) != nil
                guard let r = c.workers.removeValue(forKey: pid) else {
                    servePending(&c)
                    publish(c)
                    return nil
                }
                if c.workers.isEmpty { restoreWarmPriority(&c) }  // nothing left to compete with: get ready sooner
                if let restarted = restartIfNeverReady(&c, r, status: status) {
                    restartedOn = restarted
                } else {
                    retire(&c, r, status: status)
                }
                servePending(&c)
                publish(c)
                wakeHangUpThread()
                return r
            }
            if killedUnused {
                Log.info("warm worker \(pid) ended without a connection, \(peak)")
            } else {
                logEnd(pid, record, status: status, peak: peak, restartedOn: restartedOn)
            }
            let (exitStatus, termSignal) = ((status >> 8) & 0xff, status & 0x7f)
            let how = killedUnused ? "warm-unused" : termSignal != 0 ? "killed" : exitStatus != 0 ? "exited" : "finished"
            Event.workerEnded(worker: pid, how: how, status: exitStatus, signal: termSignal, maxRSSMiB: rssMiB,
                              restartedOn: restartedOn).emit()
        }
    }

    /// A warm worker handed a connection that died before it read a byte of it (no ready byte on its control
    /// socket): a worker started now serves the same connection from its first byte, in the same slot. Returns
    /// its pid, or nil when the record's worker is not such a one or the new worker cannot start.
    private func restartIfNeverReady(_ c: inout Counters, _ r: WorkerRecord, status: Int32) -> pid_t? {
        guard let control = r.warmControl, !r.killed, !r.peerClosed, !c.stopping else { return nil }
        if control.descriptor.receiveByteWithoutWaiting() == Self.warmReady { return nil }
        let child: pid_t
        do {
            child = try spawnWorker(conn: r.connection, pid: r.clientPID, uid: r.uid, slot: r.slot)
        } catch {
            Log.error("cannot start a worker for uid \(r.uid) pid \(r.clientPID): \(error)")
            return nil
        }
        if (status & 0x7f) != 0 { c.crashes += 1 }
        c.workers[child] = WorkerRecord(uid: r.uid, clientPID: r.clientPID, slot: r.slot, connection: r.connection)
        startWarmWorkerAfterStartUps(&c, adding: (child, r.slot))
        return child
    }

    /// Adds a reaped worker's counters to the retired totals and frees its slot (which returns the pool bytes of a
    /// worker that died holding them). Its connection closes when the record goes.
    private func retire(_ c: inout Counters, _ r: WorkerRecord, status: Int32) {
        let termSignal = status & 0x7f
        // A worker that was killed (or, while trackd stops, died of a signal) says nothing more to its client: the
        // supervisor says why, if the connection is between frames (word 8) and the client still has it open.
        let farewell = r.farewell ?? (c.stopping && termSignal != 0 ? TrackError(.daemonStopping, Self.stoppingMessage) : nil)
        if let farewell, termSignal != 0, table.load(r.slot, .sending) == 0, !r.peerClosed {
            tell(r.connection, farewell)
        }
        c.retired.samples &+= table.load(r.slot, .samplesSent)
        c.retired.copied &+= table.load(r.slot, .bytesCopied)
        c.retired.shared &+= table.load(r.slot, .bytesShared)
        table.clear(r.slot)
        c.freeSlots.append(r.slot)
        if termSignal != 0 && !r.killed && !(c.stopping && termSignal == SIGTERM) { c.crashes += 1 }
    }

    private func logEnd(_ pid: pid_t, _ record: WorkerRecord?, status: Int32, peak: String, restartedOn: pid_t?) {
        let who = record.map { "(client uid \($0.uid) pid \($0.clientPID))" } ?? ""
        let termSignal = status & 0x7f
        if let restartedOn {
            let how = termSignal != 0 ? "killed by signal \(termSignal) (\(signalDescription(termSignal)))"
                : "exited with status \((status >> 8) & 0xff)"
            Log.warning("warm worker \(pid) \(who) \(how) before it was ready, \(peak); its connection goes to worker \(restartedOn)")
        } else if termSignal != 0 {
            Log.warning("worker \(pid) \(who) killed by signal \(termSignal) (\(signalDescription(termSignal))), \(peak)")
        } else if (status >> 8) & 0xff != 0 {
            Log.notice("worker \(pid) \(who) exited with status \((status >> 8) & 0xff), \(peak)")
        } else {
            Log.info("worker \(pid) \(who) finished, \(peak)")
        }
    }

    /// Once a second: kills a worker whose client waits on it while it makes no progress for `limits.watchdog`
    /// seconds — busy (a request in progress or an output pulling with a free slot) without producing anything,
    /// or leaving its client's bytes unread (its receive loop is stuck, or the process is stopped). A worker
    /// whose client holds every slot, or is idle, is neither.
    func watchdogTick() {
        let limitMs = limits.watchdog * 1000
        let now = trackd_monotonic_ms()
        counters.withLock { c in
            for (pid, var record) in c.workers where !record.killed {
                guard table.load(record.slot, .armed) == 1 else { continue }  // still starting up
                guard let reason = stuck(&record, now: now, limitMs: limitMs) else {
                    c.workers[pid] = record
                    continue
                }
                record.killed = true
                record.farewell = TrackError(.mediaServicesWereReset,
                                             "the trackd worker serving this connection stopped making progress for \(limits.watchdog) s; trackd's watchdog ended it (\(reason))")
                c.watchdogKills += 1
                // Published now, before the log line, not when the worker is reaped: a Status asked after the line
                // (or after the client's Error) counts the kill.
                publish(c)
                Log.warning("watchdog: killing worker \(pid) (client uid \(record.uid) pid \(record.clientPID)): \(reason) (--watchdog \(limits.watchdog))")
                Event.watchdogKill(worker: pid).emit()
                kill(pid, SIGKILL)
                c.workers[pid] = record
            }
        }
    }

    /// Why the worker of `record` counts as stuck now, or nil; updates its record of unread input.
    private func stuck(_ record: inout WorkerRecord, now: UInt64, limitMs: UInt64) -> String? {
        var reason: String?
        let progress = table.load(record.slot, .progress)
        if table.load(record.slot, .busy) > 0, now > progress, now - progress > limitMs {
            reason = "its client has waited \((now - progress) / 1000) s without a sample or reply"
        }
        let unread = record.connection.descriptor.unreadBytes
        let reads = table.load(record.slot, .reads)
        if unread > 0 {
            if record.unreadSince == nil || reads != record.readsSeen {
                record.unreadSince = now
                record.readsSeen = reads
            } else if let since = record.unreadSince, now - since > limitMs {
                reason = reason ?? "it has left \(unread) bytes from its client unread for \((now - since) / 1000) s"
            }
        } else {
            record.unreadSince = nil
        }
        return reason
    }
}
