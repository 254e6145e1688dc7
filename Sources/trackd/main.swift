// trackd — one executable, two roles:
//   trackd [--socket PATH]   the supervisor (Supervisor/): listens, hands each connection to a fresh worker;
//   trackd worker …          a worker (Worker/): serves one connection, owns GStreamer. Started only by the
//                            supervisor, with the connection as fd 3.
#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "worker" {
    Log.role = "trackd-worker"
    exit(WorkerMain.run(arguments: Array(arguments.dropFirst())))
} else {
    exit(SupervisorMain.run(arguments: arguments))
}
