/// Descriptors that arrived with messages (SCM_RIGHTS), owned from `recvmsg` to their last use: an owning array that
/// cannot be copied. Each is closed when this ends, unless taken out first as a `FileDescriptor` (`takeFirst`) or
/// moved on into another owner (`append`, `removeFirst(_:)`); a caller that borrows one (`rawValue(at:)`) keeps it
/// here.
public struct ReceivedDescriptors: ~Copyable, Sendable {
    private var raw: [Int32]

    /// None.
    public init() { raw = [] }

    /// The owner of `raw`, just received (each must be open and owned by no one else).
    init(taking raw: [Int32]) {
        precondition(raw.allSatisfy { $0 >= 0 }, "ReceivedDescriptors(taking: \(raw))")
        self.raw = raw
    }

    deinit { for fd in raw { closeDescriptorReporting(fd) } }

    public var count: Int { raw.count }
    public var isEmpty: Bool { raw.isEmpty }

    /// The number of descriptor `index`, for a call that borrows it: it stays owned here.
    public func rawValue(at index: Int) -> Int32 { raw[index] }

    /// The first descriptor, now the caller's; nil when there is none.
    public mutating func takeFirst() -> FileDescriptor? {
        raw.isEmpty ? nil : FileDescriptor(taking: raw.removeFirst())
    }

    /// The first `n` descriptors (at most `count`), in an owner of their own.
    public mutating func removeFirst(_ n: Int) -> ReceivedDescriptors {
        let first = Array(raw.prefix(n))
        raw.removeFirst(first.count)
        return ReceivedDescriptors(taking: first)
    }

    /// Moves every descriptor of `other` to the end of this list.
    public mutating func append(_ other: consuming ReceivedDescriptors) {
        raw.append(contentsOf: other.takeAllRaw())
    }

    /// Closes every descriptor now; the first close error is thrown after all are closed.
    public consuming func close() throws(SystemError) {
        var first: SystemError?
        for fd in takeAllRaw() {
            do { try closeDescriptor(fd) } catch { first = first ?? error }
        }
        if let first { throw first }
    }

    /// Every descriptor, now the caller's; this ends empty (`discard` needs trivially destroyed properties).
    private consuming func takeAllRaw() -> [Int32] {
        defer { raw = [] }
        return raw
    }
}

/// What one receive got: `count` bytes (0: the peer's orderly shutdown), the descriptors that came with them, and
/// `truncated` when the peer sent more descriptors than allowed (the kernel's MSG_CTRUNC; the shim closed them all),
/// which a caller treats as a protocol error.
@frozen public struct ReceivedMessage: ~Copyable, Sendable {
    public var count: Int
    public var descriptors: ReceivedDescriptors
    public var truncated: Bool
}
