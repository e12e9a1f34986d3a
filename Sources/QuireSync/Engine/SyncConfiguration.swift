import QuireCore

/// The engine's timing and size knobs. Defaults follow the seed's measured
/// fixes (400 ms debounce, immediate targeted re-advertisement, 8 rounds in
/// 10 s → 30 s back-off); tests and the simulator shorten them.
public struct SyncConfiguration: Sendable {
    /// Fold a burst of local writes into one advertisement (the first
    /// write after a quiet spell this long goes out at once).
    public var debounceMilliseconds: UInt64 = 400
    /// Advertise at the latest this long after the first write of a burst.
    public var maxDebounceMilliseconds: UInt64 = 2_000
    /// The store tells the engine of every commit (its own process's, and
    /// other processes' through an inotify watch); this is only the safety
    /// net, how often the store is read with no such news.
    public var pollMilliseconds: UInt64 = 15_000
    /// Re-advertise to every sibling this often (± 20 %), because the relay
    /// has no mailbox and may lose the one advertisement that mattered.
    public var heartbeatMilliseconds: UInt64 = 15_000
    /// A sibling silent this long is away (stopped, asleep, offline), not
    /// syncing: two heartbeats missed at their longest (+20 %), so one frame
    /// the lossy relay dropped does not call it away.
    public var awayAfterMilliseconds: UInt64 = 2 * 18_000
    /// A pull with no reply for this long is over (nothing differed, or lost).
    public var sessionTimeoutMilliseconds: UInt64 = 1_500
    public var stormMaxRounds = 8
    public var stormWindowMilliseconds: UInt64 = 10_000
    public var stormBackoffMilliseconds: UInt64 = 30_000
    /// After start-up, the store is treated as still landing until it has
    /// matched a sibling or this long passed (nothing that infers deletions
    /// or starts a barrier may run meanwhile).
    public var quietWindowMilliseconds: UInt64 = 20_000
    /// Ranges with at most this many rows travel as key lists.
    public var keyListThreshold = 16
    /// Row bytes per response; the rest follows in the next round.
    public var maxResponseRowBytes = 8 << 20
    /// Row bytes one answer may send ahead of its response, in rows-only
    /// responses of `streamBatchRowBytes` (capped by `maxResponseRowBytes`):
    /// the puller merges a batch while the responder reads the next. The
    /// relay and the puller's inbox hold what is in flight (both take well
    /// over this: Redis drops a subscriber past 32 MiB of backlog, the
    /// inbox holds `SyncEngine.inboxByteLimit`). 0: no streaming.
    public var maxStreamedRowBytes = 24 << 20
    public var streamBatchRowBytes = 2 << 20
    /// How often the status snapshot is rewritten while something changes.
    public var statusIntervalMilliseconds: UInt64 = 500

    /// A barrier round starts this long after a sibling last matched us
    /// (a burst of convergence events becomes one attempt).
    public var barrierDebounceMilliseconds: UInt64 = 5_000
    /// A round that has not heard from every roster device by then is abandoned.
    public var barrierTimeoutMilliseconds: UInt64 = 15_000
    /// A round is worth its cost (it writes the whole anchor) only when this
    /// device holds at least this many tombstones in the collected
    /// namespaces, or when the oldest of them is at least this old.
    public var barrierMinimumTombstones = 64
    public var barrierMinimumTombstoneAgeSeconds: Int64 = 24 * 3600
    /// Errors with no success for this long show the device as wedged.
    public var wedgedAfterMilliseconds: UInt64 = 10 * 60 * 1000

    /// The namespaces this engine pulls (it answers siblings' pulls of
    /// every one). `quire init --join` pulls only the roster: it waits to be
    /// admitted, and the content is the running daemon's to fetch.
    public var pulledNamespaces: Set<Namespace> = Set(Namespace.allCases)
    /// Whether a holder's offloaded bodies are audited at each new session
    /// of it heard while this engine runs (`SyncEngine.auditHoldsIfNewSession`).
    public var auditsHolders = true
    public init() {}
}
