#if canImport(Glibc)
import Glibc
#endif

/// trackctl's own streams on fds 1 and 2 (glibc's `stdout`/`stderr` globals are not usable from Swift 6's strict
/// concurrency). All output goes through these, never `print`, so the order of lines is the order written.
enum IO {
    nonisolated(unsafe) static let out: UnsafeMutablePointer<FILE> = fdopen(1, "w")!
    nonisolated(unsafe) static let err: UnsafeMutablePointer<FILE> = {
        let f = fdopen(2, "w")!
        setvbuf(f, nil, _IONBF, 0)
        return f
    }()

    static func line(_ s: String) { fputs(s + "\n", out) }
}

func print(_ s: String) { IO.line(s) }
