/// Capability bits (PROTOCOL.md §5.3): what a client understands beyond version 2's first revision (Hello), and
/// what is in force on the connection (HelloReply). A worker sends a new message type, or gives an existing field
/// a new meaning, only under a bit the client offered; a client sends a new request type only under a bit the
/// worker announced.
public struct Capabilities: OptionSet, Sendable, Hashable {
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Bit 0: the client handles OutputStalled (0x800E), sent when an output waits because the client holds every
    /// slot it may hold (PROTOCOL.md §9, §12.3).
    public static let outputStalled = Capabilities(rawValue: 1 << 0)

    /// The bits the worker uses when the client offers them: new things the worker sends.
    public static let workerSends: Capabilities = [.outputStalled]
    /// The bits the worker announces whatever the client offers: new requests it accepts.
    public static let workerAccepts: Capabilities = []

    /// HelloReply's bits for a Hello offering `offered`: of those, the ones the worker will use, and the requests
    /// it accepts.
    public static func agreed(offered: Capabilities) -> Capabilities {
        offered.intersection(workerSends).union(workerAccepts)
    }
}
