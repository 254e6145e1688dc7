// trackd — one executable, two roles:
//   trackd [--socket PATH]   the supervisor (Supervisor/): listens, hands each connection to a fresh worker;
//   trackd worker …          a worker (Worker/): serves one connection, owns GStreamer. Started only by the
//                            supervisor, with the connection as fd 3.
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

// A descriptor whose owner ended without anyone to throw to, and whose close failed, is logged like any warning.
CloseFailures.route { Log.warning("\($0)") }
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "worker" {
    Log.role = "trackd-worker"
    // _exit, not exit: a worker that has served its connection is done, and exit() would run atexit handlers and
    // library destructors (libav, ORC, glibc's stdio cleanup) while GStreamer threads may still hold their locks.
    // Its log lines are already written (Log writes to fd 2 unbuffered).
    _exit(WorkerMain.run(arguments: Array(arguments.dropFirst())))
} else {
    exit(SupervisorMain.run(arguments: arguments))
}
