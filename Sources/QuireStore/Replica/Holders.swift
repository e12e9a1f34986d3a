import QuireCore

/// Who held which version (`holders`). Recovery keeps a version that only
/// devices outside the barrier's roster held: that barrier cannot have
/// collected its delete. No record means the fleet's.
///
/// Once this device knows a roster (its last barrier's, else that of the
/// first round it took part in), a record is written only where it can
/// matter:
/// - for a holder outside that roster;
/// - for anyone, once a record of that version exists, so an outsider's
///   record never hides that the fleet held the version too;
/// - for "not known" (the fleet's), beside an outsider's first record of
///   a version that reached this device before.
/// Before it knows one, every holder is recorded: a copy of this device
/// from before a round it took part in (put back by hand) cannot know
/// which devices joined after that round.
///
/// Why a known roster is enough: a device whose rows reach this one is
/// trusted now, so every later round's roster names it (a round needs
/// equal digests, and the digest covers `.devices`); only a round this
/// device took part in already can leave it out, and rosters only grow.
/// (What only a device revoked later held counts as the fleet's.)
///
/// This device's own writes are recorded per row and incarnation with no
/// upper counter: the holders of its latest write there, whoever they are
/// (a roster member too: recovery counts that as the fleet's, as it would
/// count no record, and a restore needs it to tell a write that only a
/// device revoked since received). Only the siblings that confirm it while
/// it is unconfirmed are recorded: the first, mostly. A new write on the
/// row clears them (`noteUnshipped`): it waits for its own holders.
/// A roster as `meta` keeps it: the device ids, sorted, end to end.
enum StoredRoster {
    static func encode(_ roster: [DeviceID]) -> [UInt8] { roster.sorted().flatMap(\.bytes) }
    static func decode(_ blob: [UInt8]) -> [DeviceID] {
        stride(from: 0, to: blob.count - blob.count % 16, by: 16).compactMap { ID16(bytes: Array(blob[$0..<$0 + 16])) }
    }
}

extension ReplicaStore {
    /// The `holder` of a version whose holder is not known.
    static let unknownHolder = [UInt8](repeating: 0, count: 16)

    /// This device takes part in a barrier round (it acks, or it leads)
    /// over `roster`: until a barrier's roster is recorded here, holders
    /// outside this one are recorded. Only the first round counts: rosters
    /// only grow (but for revoked devices), so the roster known here is
    /// never larger than that of a round that could commit later.
    public func noteBarrierRound(roster: [DeviceID]) throws(StoreError) {
        let known = try read { () throws(StoreError) -> Bool in
            try db.queryOne("SELECT 1 FROM meta WHERE name IN ('barrier_roster', 'barrier_round_roster')") { _ in true } ?? false
        }
        guard !known else { return }
        try write { ctx in
            try ctx.db.run("INSERT OR IGNORE INTO meta(name, value) VALUES ('barrier_round_roster', ?)", [.blob(StoredRoster.encode(roster))])
        }
    }
}

extension WriteContext {
    /// A holder of this device's writes on a row: every write made there so far.
    static let allWrites = UInt64(Int64.max)

    /// The roster holders are recorded against (nil: none known yet, and
    /// every holder is recorded), read once per transaction.
    mutating func recordingFleet() throws(StoreError) -> Set<[UInt8]>? {
        if let known = holderRoster { return known }
        let blobs = try db.query("SELECT name, value FROM meta WHERE name IN ('barrier_roster', 'barrier_round_roster')") {
            (name: $0.text(0) ?? "", value: $0.blob(1) ?? [])
        }
        let fleet = ((blobs.first { $0.name == "barrier_roster" } ?? blobs.first)?.value).map { Set(StoredRoster.decode($0).map(\.bytes)) }
        holderRoster = .some(fleet)
        return fleet
    }

    /// Whether `device` counts as the fleet's (a holder not known does, as
    /// recovery counts it).
    private mutating func isFleet(_ device: DeviceID?) throws(StoreError) -> Bool {
        guard let device else { return true }
        guard let fleet = try recordingFleet() else { return false }
        return fleet.contains(device.bytes)
    }

    private func hasRecord(_ ns: Namespace, _ key: RowKey, _ actor: Actor) throws(StoreError) -> Bool {
        try db.queryOne("SELECT 1 FROM holders WHERE ns = ? AND key = ? AND author = ? AND incarnation = ? LIMIT 1",
                        [.int(Int64(ns.rawValue)), .blob(key.bytes), .blob(actor.device.bytes), .int(Int64(bitPattern: actor.incarnation))]) { _ in true } ?? false
    }

    /// `device` (nil: not known) holds `actor`'s writes on the row up to
    /// `counter`. `heldBefore`: whether the version reached this device
    /// before (from the fleet, if no record says otherwise); asked only
    /// for an outsider's first record.
    mutating func noteHeld(_ ns: Namespace, _ key: RowKey, actor: Actor, counter: UInt64, by device: DeviceID?,
                           heldBefore: () throws(StoreError) -> Bool) throws(StoreError) {
        // This device's own writes: every confirming holder is kept, so a
        // restore can tell a write only a device revoked since received.
        if actor.device != store.deviceID {
            if try isFleet(device) {
                guard try hasRecord(ns, key, actor) else { return }
            } else if try heldBefore(), try !hasRecord(ns, key, actor) {
                try upsertHolder(ns, key, actor: actor, counter: counter, holder: ReplicaStore.unknownHolder)
            }
        }
        try upsertHolder(ns, key, actor: actor, counter: counter, holder: device?.bytes ?? ReplicaStore.unknownHolder)
    }

    /// `device` holds this device's writes of `incarnation` on the row (the
    /// first holder of its latest one there).
    mutating func noteConfirmed(_ ns: Namespace, _ key: RowKey, incarnation: UInt64, by device: DeviceID?) throws(StoreError) {
        try noteHeld(ns, key, actor: Actor(device: store.deviceID, incarnation: incarnation), counter: Self.allWrites,
                     by: device, heldBefore: { false })
    }

    /// `sibling` holds every version this device holds in `ns`: it is the
    /// first holder of each write still waiting for one. One statement: a
    /// first sync can confirm every row of a big notebook at once.
    mutating func noteAllConfirmed(_ ns: Namespace, by sibling: DeviceID) throws(StoreError) {
        // Recorded for a sibling of the roster too (noteHeld says why).
        try db.run("""
            INSERT INTO holders(ns, key, author, incarnation, holder, counter)
            SELECT u.ns, u.key, ?, u.incarnation, ?, ? FROM unshipped u WHERE u.ns = ?
             ON CONFLICT(ns, key, author, incarnation, holder) DO UPDATE SET counter = max(counter, excluded.counter)
            """, [.blob(store.deviceID.bytes), .blob(sibling.bytes), .int(Int64(Self.allWrites)), .int(Int64(ns.rawValue))])
    }

    /// A new write of this device on the row: the holders of its earlier
    /// ones there are not holders of this one.
    mutating func forgetHolders(_ ns: Namespace, _ key: RowKey, of actor: Actor) throws(StoreError) {
        try db.run("DELETE FROM holders WHERE ns = ? AND key = ? AND author = ? AND incarnation = ?",
                   [.int(Int64(ns.rawValue)), .blob(key.bytes), .blob(actor.device.bytes), .int(Int64(bitPattern: actor.incarnation))])
    }

    private func upsertHolder(_ ns: Namespace, _ key: RowKey, actor: Actor, counter: UInt64, holder: [UInt8]) throws(StoreError) {
        try db.run("""
            INSERT INTO holders(ns, key, author, incarnation, holder, counter) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(ns, key, author, incarnation, holder) DO UPDATE SET counter = max(counter, excluded.counter)
            """, [.int(Int64(ns.rawValue)), .blob(key.bytes), .blob(actor.device.bytes), .int(Int64(bitPattern: actor.incarnation)),
                  .blob(holder), .int(Int64(counter))])
    }
}
