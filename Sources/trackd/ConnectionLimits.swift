/// What connections may take of the daemon (issue #4): how many at once and per uid, how fast one uid may open
/// them, how long a handshake or an idle connection may last, the pool bytes per client and in all, and how long a
/// worker may stop answering (the watchdog). Each is a `trackd` option with a documented default (docs/SECURITY.md,
/// docs/PROTOCOL.md §5). The supervisor enforces the connection limits and the watchdog itself and passes the
/// rest to each worker on its command line (Options: one row per limit, made from `options`).
struct ConnectionLimits: Sendable, Equatable {
    var maxConnections: UInt64 = 64
    var maxConnectionsPerUID: UInt64 = 16
    var handshakeTimeout: UInt64 = 5
    var idleTimeout: UInt64 = 900
    var poolBytesPerClient: UInt64 = 512 << 20
    var poolBytesTotal: UInt64 = 2 << 30
    var watchdog: UInt64 = 30
    /// New connections one uid may open per second, on average (a token bucket; 0 = no rate limit).
    var connectionRatePerUID: UInt64 = 100
    /// New connections one uid may open at once before the rate applies (the bucket's size).
    var connectionBurstPerUID: UInt64 = 200

    static let defaults = ConnectionLimits()

    struct Option {
        let name: String
        let keyPath: any WritableKeyPath<ConnectionLimits, UInt64> & Sendable
        let range: ClosedRange<UInt64>
        /// Passed on to workers.
        let worker: Bool
        let help: String
    }

    /// One row per limit; Options.table turns each into a `trackd` option (parsing, the workers' arguments, `--help`).
    static var options: [Option] {
        [
            Option(name: "--max-connections", keyPath: \.maxConnections, range: 1...4096, worker: false,
                   help: "connections served at once, all users together"),
            Option(name: "--max-connections-per-uid", keyPath: \.maxConnectionsPerUID, range: 1...4096, worker: false,
                   help: "connections served at once for one client uid"),
            Option(name: "--handshake-timeout", keyPath: \.handshakeTimeout, range: 1...3600, worker: true,
                   help: "seconds a new connection has to send a complete Hello"),
            Option(name: "--idle-timeout", keyPath: \.idleTimeout, range: 0...604_800, worker: true,
                   help: "seconds without a message while nothing is in progress before the session is closed (0 = never)"),
            Option(name: "--pool-bytes-per-client", keyPath: \.poolBytesPerClient, range: (1 << 20)...(1 << 40), worker: true,
                   help: "shared-memory pool bytes one connection may have"),
            Option(name: "--pool-bytes-total", keyPath: \.poolBytesTotal, range: (1 << 20)...(1 << 44), worker: true,
                   help: "shared-memory pool bytes of all connections together"),
            Option(name: "--watchdog", keyPath: \.watchdog, range: 0...3600, worker: false,
                   help: "seconds a worker may make no progress while its client waits before it is killed (0 = off)"),
            Option(name: "--connection-rate-per-uid", keyPath: \.connectionRatePerUID, range: 0...100_000, worker: false,
                   help: "new connections one client uid may open per second, on average (0 = no rate limit; refused: −11905)"),
            Option(name: "--connection-burst-per-uid", keyPath: \.connectionBurstPerUID, range: 1...100_000, worker: false,
                   help: "new connections one client uid may open at once before --connection-rate-per-uid applies"),
        ]
    }
}
