import QuireCore

/// The replica's tables. Applied migrations are recorded in `user_version`
/// and each runs in one immediate transaction, so a crash mid-migration
/// leaves the previous schema intact. A migration is SQL, optionally
/// followed by a data conversion in Swift inside the same transaction.
enum Schema {
    struct Migration {
        var sql: String
        var convert: ((Connection, _ random: any RandomSource) throws(StoreError) -> Void)? = nil
    }

    static var all: [Migration] {
        migrations.map { Migration(sql: $0) } + [Migration(sql: headsMigration, convert: RowsToHeads.convert),
                                                 Migration(sql: shadowsSameAsBody),
                                                 Migration(sql: "ALTER TABLE rows ADD COLUMN bodyFormat INTEGER NOT NULL DEFAULT 0;",
                                                           convert: deflateBodies),
                                                 Migration(sql: collectedLog),
                                                 Migration(sql: graveyard),
                                                 Migration(sql: "-- contacts and plans as whole cards (leaf version 3)\nSELECT 1;",
                                                           convert: CardsUpgrade.convert),
                                                 Migration(sql: folderTree),
                                                 Migration(sql: KeptTable.migration),
                                                 Migration(sql: copyPins),
                                                 Migration(sql: holders),
                                                 Migration(sql: deletedProse),
                                                 Migration(sql: barrierLists)]
    }

    /// The lists of what the last barrier rounds this device led collected
    /// (`BarrierLists`), newest at the highest `at`, sent again to a
    /// follower that asks. Rounds led before the upgrade have none here.
    static let barrierLists = """
        CREATE TABLE barrier_lists(nonce BLOB PRIMARY KEY, at INTEGER NOT NULL, list BLOB NOT NULL);
        """

    /// The paragraphs a prose row showed here when it was deleted
    /// (`DeletedProse`): 32-byte paragraph hashes, one after another.
    /// Rows deleted before the upgrade have no record: written again, they
    /// carry no tombstones for their old text, as before.
    static let deletedProse = """
        CREATE TABLE deleted_prose(ns INTEGER NOT NULL, key BLOB NOT NULL, hashes BLOB NOT NULL, PRIMARY KEY(ns, key)) WITHOUT ROWID;
        """

    /// Which devices are known to hold a version, per row and author
    /// incarnation, up to which counter: the sibling a row came from holds
    /// its heads, and the sibling that confirmed this device's writes holds
    /// them. Recovery keeps a version that only devices outside the
    /// barrier's roster ever held: the barrier cannot have collected it.
    /// `holder` all zero: not known (counted as the fleet's). Versions from
    /// before this table have no record here and count as the fleet's.
    static let holders = """
        CREATE TABLE holders(ns INTEGER NOT NULL, key BLOB NOT NULL, author BLOB NOT NULL, incarnation INTEGER NOT NULL,
                             holder BLOB NOT NULL, counter INTEGER NOT NULL,
                             PRIMARY KEY(ns, key, author, incarnation, holder)) WITHOUT ROWID;
        """

    /// Resident copies of note bodies that a sibling's offload counted
    /// (git-annex's numcopies: a copy that was counted is not dropped
    /// without as many others). Per device, never in a leaf. `epoch`: the
    /// owner's clock when it counted, so a late release of an older count
    /// leaves a newer one alone. A held body kept only because a pin was
    /// on it (its note went here) is marked, so a release drops that one
    /// and never a body held as a homebase.
    static let copyPins = """
        CREATE TABLE copy_pins(hash BLOB NOT NULL, owner BLOB NOT NULL, required INTEGER NOT NULL, epoch INTEGER NOT NULL,
                               at INTEGER NOT NULL, PRIMARY KEY(hash, owner)) WITHOUT ROWID;
        ALTER TABLE held_bodies ADD COLUMN forPin INTEGER NOT NULL DEFAULT 0;
        """

    /// The notebook as a folder tree: each row's kind, folder and set
    /// modification time, and how many versions it holds, as columns, so
    /// the mount lists folders without decoding rows. Rows stored before
    /// are notes at the top (the defaults); their leaves do not change.
    static let folderTree = """
        ALTER TABLE rows ADD COLUMN kind INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE rows ADD COLUMN parent BLOB;
        ALTER TABLE rows ADD COLUMN mtime INTEGER;
        ALTER TABLE rows ADD COLUMN versions INTEGER NOT NULL DEFAULT 1;
        """

    /// The causal context of every tombstone a barrier collected, per key
    /// (joined when a key is collected again): `CollectedTombstone`. It
    /// goes into each anchor this device writes, so a device put back from
    /// a backup can tell a version the fleet deleted from one it never saw.
    ///
    /// And `unshipped` keeps the first unconfirmed counter per row and per
    /// incarnation: with one record per row, an edit made after a restore
    /// (a new incarnation) on a row that held an unconfirmed version from
    /// before it went unrecorded, and recovery from the anchor dropped it.
    static let graveyard = """
        CREATE TABLE graveyard(ns INTEGER NOT NULL, key BLOB NOT NULL, context BLOB NOT NULL, at INTEGER NOT NULL,
                               PRIMARY KEY(ns, key)) WITHOUT ROWID;
        CREATE TABLE unshipped_by_incarnation(
            ns INTEGER NOT NULL, key BLOB NOT NULL, incarnation INTEGER NOT NULL, counter INTEGER NOT NULL,
            PRIMARY KEY(ns, key, incarnation)
        ) WITHOUT ROWID;
        INSERT INTO unshipped_by_incarnation(ns, key, incarnation, counter) SELECT ns, key, incarnation, counter FROM unshipped;
        DROP TABLE unshipped;
        ALTER TABLE unshipped_by_incarnation RENAME TO unshipped;
        """

    /// Rows a barrier collected, by change number: a running mount reads
    /// changes by number, and a row deleted outright leaves no number, so a
    /// mount that had not yet read the tombstone would keep showing it.
    static let collectedLog = """
        CREATE TABLE collected(id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, ns INTEGER NOT NULL, key BLOB NOT NULL, at INTEGER NOT NULL);
        CREATE INDEX collected_seq ON collected(seq);
        """

    /// Note bodies are kept deflated where that saves space (`StoredBody`);
    /// the ones already stored are deflated in place.
    static func deflateBodies(_ db: Connection, _ random: any RandomSource) throws(StoreError) {
        let bodies = try db.query("SELECT id, body FROM rows WHERE body IS NOT NULL AND bodyFormat = 0") { ($0.int(0), $0.blob(1) ?? []) }
        for (id, body) in bodies {
            let stored = StoredBody.encode(body)
            guard stored.format != StoredBody.raw else { continue }
            try db.run("UPDATE rows SET body = ?, bodyFormat = ? WHERE id = ?", [.blob(stored.bytes), .int(stored.format), .int(id)])
        }
    }

    /// A shadow equal to the row's stored text is kept as a mark, not a
    /// second copy (most shadows are: the device last wrote or accepted
    /// what it stores). Existing note shadows equal to their body become
    /// marks now; the rest on their next write.
    static let shadowsSameAsBody = """
        ALTER TABLE shadows ADD COLUMN same INTEGER NOT NULL DEFAULT 0;
        UPDATE shadows SET text = X'', same = 1
         WHERE ns = \(Namespace.notebook.rawValue)
           AND text = (SELECT body FROM rows WHERE rows.ns = shadows.ns AND rows.key = shadows.key);
        """

    /// Rows become heads with dots under a causal context; this device gets
    /// an incarnation; the records that let it notice it was rolled back.
    static let headsMigration = """
        -- This device's writes not yet seen held by any sibling: the first
        -- unconfirmed counter per row (see ReplicaStore+Incarnation).
        CREATE TABLE unshipped(
            ns INTEGER NOT NULL, key BLOB NOT NULL, incarnation INTEGER NOT NULL, counter INTEGER NOT NULL,
            PRIMARY KEY(ns, key)
        ) WITHOUT ROWID;
        -- Each time this device learned it was rolled back.
        CREATE TABLE rollbacks(
            id INTEGER PRIMARY KEY, at INTEGER NOT NULL, old INTEGER NOT NULL, new INTEGER NOT NULL,
            reason TEXT NOT NULL, reissued INTEGER NOT NULL
        );
        -- Note bodies found not to match their hash (damaged on disk): the
        -- body is set aside like an offloaded one and fetched again from a
        -- sibling or the homebase; `repaired` is when a good copy landed.
        CREATE TABLE damaged(
            id INTEGER PRIMARY KEY, key BLOB NOT NULL, hash BLOB NOT NULL, name TEXT NOT NULL,
            at INTEGER NOT NULL, repaired INTEGER
        );
        -- Rows that hold two versions under one dot (both kept).
        CREATE TABLE collisions(
            id INTEGER PRIMARY KEY, ns INTEGER NOT NULL, key BLOB NOT NULL, dot TEXT NOT NULL,
            at INTEGER NOT NULL, name TEXT NOT NULL
        );
        """

    /// 'QUIR': marks a file as a quire replica, so a foreign SQLite file
    /// is refused instead of being written into.
    static let applicationID: Int64 = 0x5155_4952

    static let migrations: [String] = [
        """
        CREATE TABLE rows(
            id INTEGER PRIMARY KEY,
            ns INTEGER NOT NULL,
            key BLOB NOT NULL,
            vv BLOB NOT NULL,
            tombstone INTEGER NOT NULL,
            name TEXT NOT NULL DEFAULT '',
            updated INTEGER NOT NULL DEFAULT 0,
            size INTEGER NOT NULL DEFAULT 0,
            leaf BLOB,
            seq INTEGER NOT NULL,
            offloaded INTEGER NOT NULL DEFAULT 0,
            holders BLOB,
            content BLOB,
            body BLOB
        );
        CREATE UNIQUE INDEX rows_key ON rows(ns, key);
        CREATE INDEX rows_seq ON rows(seq);
        -- Fingerprints (count, 256-bit sum of leaves) of every key prefix of
        -- 0..3 nibbles: level 0 is the namespace root. Maintained in the same
        -- transaction as the row, so a root never needs a scan.
        CREATE TABLE buckets(
            ns INTEGER NOT NULL, level INTEGER NOT NULL, prefix INTEGER NOT NULL,
            count INTEGER NOT NULL, sum BLOB NOT NULL,
            PRIMARY KEY(ns, level, prefix)
        ) WITHOUT ROWID;
        -- The outbox: written in the same transaction as the local edits it
        -- speaks of (one record per namespace and transaction: the last key,
        -- how many edits, this device's highest counter), so a change can
        -- never exist without the note that it must be advertised.
        CREATE TABLE outbox(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            ns INTEGER NOT NULL, key BLOB NOT NULL, counter INTEGER NOT NULL,
            edits INTEGER NOT NULL DEFAULT 1, at INTEGER NOT NULL
        );
        CREATE TABLE meta(name TEXT PRIMARY KEY, value) WITHOUT ROWID;
        INSERT INTO meta(name, value) VALUES ('seq', 0);
        -- Device-local text this device last wrote or accepted (never synced).
        CREATE TABLE shadows(ns INTEGER NOT NULL, key BLOB NOT NULL, text BLOB NOT NULL, PRIMARY KEY(ns, key)) WITHOUT ROWID;
        -- Audit trail of concurrent merges, so a user can see why a paragraph came back.
        CREATE TABLE merges(id INTEGER PRIMARY KEY, ns INTEGER NOT NULL, key BLOB NOT NULL, at INTEGER NOT NULL, detail TEXT NOT NULL);
        CREATE INDEX merges_key ON merges(ns, key);
        """,
        """
        -- Bodies this device holds for others (a homebase): committed before
        -- any offload_ack, so an ack always speaks of landed bytes.
        CREATE TABLE held_bodies(
            hash BLOB PRIMARY KEY, body BLOB NOT NULL, size INTEGER NOT NULL,
            owner BLOB NOT NULL, at INTEGER NOT NULL
        );
        -- A note's content hash, so a recalled body finds the offloaded
        -- notes it belongs to without decoding every row. (Indexed only for
        -- offloaded rows: a random-key index over every note would double
        -- the cost of each insert.)
        ALTER TABLE rows ADD COLUMN hash BLOB;
        CREATE INDEX rows_offloaded_hash ON rows(hash) WHERE offloaded = 1;
        """,
        """
        -- Tombstones by namespace and key: counting them (status, the
        -- mount's .quire/status) and serving them by key range (sync) read
        -- only tombstones, not every row. Live rows never enter it, so an
        -- insert pays nothing.
        CREATE INDEX rows_tombstones ON rows(ns, tombstone, key) WHERE tombstone = 1;
        """,
    ]
}
