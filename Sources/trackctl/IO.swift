/// trackctl's own streams on fds 1 and 2 (glibc's `stdout`/`stderr` globals are not usable from Swift 6's strict
/// concurrency). All output goes through these, never `print`, so the order of lines is the order written.
enum IO {
    static let out = OutputFile.stream(1, unbuffered: false)
    static let err = OutputFile.stream(2, unbuffered: true)

    static func line(_ s: String) { out.write(s + "\n") }
}

func print(_ s: String) { IO.line(s) }
