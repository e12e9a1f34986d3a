import QuireCore

/// The barrier's lists of what a round collected (`gc_collected`), kept
/// across restarts on both sides of a list that was lost on the way: the
/// leader keeps the lists of its last rounds (`barrier_lists`) to send
/// again when a follower asks, and a follower that committed without its
/// list keeps asking for it (`awaited_list` in meta) after a restart. Both
/// are this device's own bookkeeping: never in a leaf.
public struct AwaitedList: Equatable, Sendable {
    /// The round's nonce.
    public var nonce: [UInt8]
    public var leader: DeviceID
    public var generation: UInt64
    /// Where the graveyard's claim started when it reached the round
    /// before (nil: it did not).
    public var previousSince: UInt64?

    public init(nonce: [UInt8], leader: DeviceID, generation: UInt64, previousSince: UInt64?) {
        self.nonce = nonce
        self.leader = leader
        self.generation = generation
        self.previousSince = previousSince
    }
}

extension ReplicaStore {
    /// Keeps the list of a round this device led, with those of its
    /// `keep - 1` rounds before (the oldest go).
    public func keepSentList(nonce: [UInt8], list: [UInt8], keep: Int) throws(StoreError) {
        try write { ctx in
            try ctx.db.run("INSERT OR REPLACE INTO barrier_lists(nonce, at, list) VALUES (?, (SELECT coalesce(max(at), 0) + 1 FROM barrier_lists), ?)",
                           [.blob(nonce), .blob(list)])
            try ctx.db.run("DELETE FROM barrier_lists WHERE at NOT IN (SELECT at FROM barrier_lists ORDER BY at DESC LIMIT ?)", [.int(Int64(keep))])
        }
    }

    /// The list of round `nonce`, if this device led it and keeps it still.
    public func sentList(nonce: [UInt8]) throws(StoreError) -> [UInt8]? {
        try read { () throws(StoreError) -> [UInt8]? in
            try db.queryOne("SELECT list FROM barrier_lists WHERE nonce = ?", [.blob(nonce)]) { $0.blob(0) ?? [] }
        }
    }

    /// The list this device still asks a leader for, if any.
    public func awaitedList() throws(StoreError) -> AwaitedList? {
        try read { () throws(StoreError) -> AwaitedList? in
            guard let text = try db.queryOne("SELECT value FROM meta WHERE name = 'awaited_list'", [], { $0.text(0) ?? "" }) else { return nil }
            let parts = text.split(separator: " ").map(String.init)
            guard parts.count == 4, let nonce = Hex.decode(parts[0]), nonce.count == 16,
                  let leader = Hex.decode(parts[1]).flatMap(DeviceID.init(bytes:)), let generation = UInt64(parts[2]) else { return nil }
            return AwaitedList(nonce: nonce, leader: leader, generation: generation, previousSince: UInt64(parts[3]))
        }
    }

    /// Records the list to ask for (nil: none any more).
    public func setAwaitedList(_ awaited: AwaitedList?) throws(StoreError) {
        try write { ctx in
            if let a = awaited {
                try ctx.db.run("INSERT OR REPLACE INTO meta(name, value) VALUES ('awaited_list', ?)",
                               [.text("\(Hex.encode(a.nonce)) \(a.leader.hex) \(a.generation) \(a.previousSince.map(String.init) ?? "-")")])
            } else {
                try ctx.db.run("DELETE FROM meta WHERE name = 'awaited_list'")
            }
        }
    }
}
