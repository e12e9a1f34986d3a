import QuireCore

/// Which barrier rounds the graveyard names in full: every version the
/// rounds of generations `since` through `through` collected. A device that
/// recovers from a snapshot whose graveyard covers every round after its own
/// generation can tell what the fleet collected from what it merely has not
/// seen yet (a write made after a round agreed, by a device the commit had
/// not reached): only what the graveyard names goes (`ReplicaStore.recover`).
///
/// A round is covered only where this device buried every tombstone it
/// collected, the whole roster's (the leader's union, sent just before the
/// commit as `gc_collected`), not only its own: digests leave tombstones out, so a sibling may
/// have collected a delete this device never held. Kept in meta
/// (`graveyard_covers`); no row means nothing is claimed.
public struct GraveyardCoverage: Equatable, Sendable {
    public var since: UInt64
    public var through: UInt64

    public init(since: UInt64, through: UInt64) {
        self.since = since
        self.through = through
    }

    /// Whether the rounds after a device at generation `local`, up to this
    /// coverage's, are all named.
    public func covers(after local: UInt64) -> Bool { since <= local + 1 }

    /// The coverage once round `generation` was collected with every
    /// tombstone of it buried: this one extended when it reached the round
    /// before, else that round alone.
    public func extended(to generation: UInt64) -> GraveyardCoverage {
        through + 1 == generation ? GraveyardCoverage(since: since, through: generation) : GraveyardCoverage(since: generation, through: generation)
    }

    var text: String { "\(since) \(through)" }

    init?(text: String) {
        let parts = text.split(separator: " ")
        guard parts.count == 2, let since = UInt64(parts[0]), let through = UInt64(parts[1]), since <= through + 1 else { return nil }
        self.init(since: since, through: through)
    }
}

extension ReplicaStore {
    /// The rounds the graveyard names in full (nil: none claimed).
    public func graveyardCoverage() throws(StoreError) -> GraveyardCoverage? {
        try read { () throws(StoreError) -> GraveyardCoverage? in try GraveyardCoverage.load(db) }
    }
}

extension GraveyardCoverage {
    static func load(_ db: Connection) throws(StoreError) -> GraveyardCoverage? {
        let text = try db.queryOne("SELECT value FROM meta WHERE name = 'graveyard_covers'", []) { $0.text(0) ?? "" }
        return text.flatMap(GraveyardCoverage.init(text:))
    }

    /// Records `coverage`, or with nil, forgets any claim.
    static func store(_ coverage: GraveyardCoverage?, _ db: Connection) throws(StoreError) {
        if let coverage {
            try db.run("INSERT OR REPLACE INTO meta(name, value) VALUES ('graveyard_covers', ?)", [.text(coverage.text)])
        } else {
            try db.run("DELETE FROM meta WHERE name = 'graveyard_covers'")
        }
    }
}

extension ReplicaStore {
    /// The list of round `generation` that came after its commit (asked for
    /// again): its entries join the graveyard, and the claim the missing
    /// list broke is mended where nothing else broke it since. The claim
    /// reached the round before from `previousSince` (nil: it did not);
    /// `currentGeneration` is this device's now. Returns the claim as left.
    @discardableResult
    public func buryLateCollection(_ round: [CollectedTombstone], generation: UInt64, previousSince: UInt64?,
                                   currentGeneration: UInt64) throws(StoreError) -> GraveyardCoverage? {
        try write { ctx in
            try ctx.bury(round)
            let head = previousSince ?? generation
            var coverage = try GraveyardCoverage.load(ctx.db)
            if let claim = coverage, claim.since == generation + 1 {
                // Later rounds came with their lists: the claim runs on from the round.
                coverage = GraveyardCoverage(since: head, through: claim.through)
            } else if coverage == nil, currentGeneration == generation {
                coverage = GraveyardCoverage(since: head, through: generation)
            }
            try GraveyardCoverage.store(coverage, ctx.db)
            return coverage
        }
    }
}
