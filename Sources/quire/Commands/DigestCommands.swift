import Foundation
import QuireCore
import QuireStore
import QuireSync
import QuireDaemon

enum DigestCommands {
    static let digest = Command(
        name: "digest",
        summary: "print the state digest: one root per namespace",
        usage: """
            usage: quire digest [--json] [--verify]

            Prints each namespace's root (hex), its live row and tombstone counts,
            the generation, and the encoded digest's size. Two devices holding the
            same content print the same roots. Their tombstone counts may differ: a
            deletion of a row a device never held has nothing to bury there, and
            roots cover live content only.
              --json     as JSON (roots in hex, the encoded digest in hex)
              --verify   also recompute every root from the rows' content and
                         fail if a maintained root differs
            """,
        flags: ["json", "verify"]
    ) { args, inv in
        try args.expectPositional(0...0, "")
        let (_, store) = try inv.open()
        let prefs = try inv.home.prefs.load()
        let digest = try store.digest(generation: prefs.generation)
        var verified: Bool? = nil
        if args.has("verify") {
            verified = try store.recomputedRoots() == digest.roots
        }
        var perNamespace: [[String: Any]] = []
        for ns in Namespace.allCases {
            let c = try store.counts(ns)
            perNamespace.append(["namespace": ns.name, "root": Hex.encode(digest.roots[ns]!), "rows": c.live, "tombstones": c.tombstones])
        }
        if args.has("json") {
            var o: [String: Any] = ["version": Int(StateDigest.wireVersion), "generation": digest.generation,
                                    "namespaces": perNamespace, "encoded": Hex.encode(digest.encoded()), "size": digest.encoded().count]
            if let verified { o["verified"] = verified }
            Output.json(o)
        } else {
            Output.line("digest version \(StateDigest.wireVersion), generation \(digest.generation), \(digest.encoded().count) bytes")
            for entry in perNamespace {
                let name = (entry["namespace"] as! String).padding(toLength: 9, withPad: " ", startingAt: 0)
                Output.line("\(name) \(entry["root"] as! String)  rows \(entry["rows"] as! Int)  tombstones \(entry["tombstones"] as! Int)")
            }
            if let verified { Output.line(verified ? "verified: every root equals a full recomputation" : "MISMATCH: a maintained root differs from the recomputation") }
        }
        if verified == false { throw CommandFailure("maintained roots differ from a full recomputation; the replica needs repair") }
    }

    static let status = Command(
        name: "status",
        summary: "what this device holds and whether it is in sync",
        usage: """
            usage: quire status [--json]

            Says, in words, what this device is, what it holds, what waits to be
            advertised, and anything that stops it from converging.
              --json   the same as JSON
            """,
        flags: ["json"]
    ) { args, inv in
        try args.expectPositional(0...0, "")
        let (identity, store) = try inv.open()
        let report = try StatusReport.gather(home: inv.home, identity: identity, store: store)
        if args.has("json") { Output.json(report.json) } else { Output.line(report.text) }
    }

    static let history = Command(
        name: "history",
        summary: "show the merge audit trail of a row",
        usage: """
            usage: quire history <namespace> <name> [--key HEX]

            Lists the concurrent merges that joined versions of a row, oldest first,
            so you can see why a paragraph came back.
            """,
        valued: ["key"]
    ) { args, inv in
        let (ns, store, key) = try RowCommands.existingRow(args, inv)
        let merges = try store.mergeHistory(ns, key)
        if merges.isEmpty { Output.line("no merges recorded for \(ns.name)/\(key.hex)") }
        for m in merges { Output.line("\(DateText.format(m.at.seconds, time: true))  \(m.detail)") }
    }
}

/// The words `quire status` prints (and the mount's `.quire/status`).
struct StatusReport {
    var json: [String: Any]
    var text: String
    /// Free bytes on the device's disk below which status warns, and below
    /// which it says the disk is full.
    static let lowDiskSpace: Int64 = 64 << 20
    static let fullDisk: Int64 = 1 << 20

    /// The bytes the regular files under `path` take (0 when unreadable).
    static func bytesUnder(_ path: String) -> Int64 {
        guard let walker = FileManager.default.enumerator(atPath: path) else { return 0 }
        var total: Int64 = 0
        while walker.nextObject() != nil {
            if walker.fileAttributes?[.type] as? FileAttributeType == .typeRegular {
                total += (walker.fileAttributes?[.size] as? NSNumber)?.int64Value ?? 0
            }
        }
        return total
    }

    static func gather(home: DeviceHome, identity: Identity, store: ReplicaStore) throws -> StatusReport {
        let role = try RoleCommand.settledRole(home: home, identity: identity, store: store)
        let prefs = try home.prefs.load()
        var counts: [String: Any] = [:]
        var lines = ["device '\(prefs.deviceName)' (\(identity.deviceID.hex.prefix(12))), role \(role.rawValue), in \(home.path)",
                     "account \(Hex.encode(identity.userIDHash).prefix(12)), generation \(prefs.generation)"]
        // Behind the fleet's anchor: said at the top, whoever found it (the
        // running sync, or the check a command ran before it opened the
        // replica), since rows the fleet deleted may show meanwhile.
        let syncSnapshot = SyncStatus.load(from: home)
        let anchorCheck = AnchorCatchUp.current(home: home, generation: prefs.generation)
        let syncSpeaks = syncSnapshot?.isProcessAlive == true
        let behindFleet = syncSpeaks ? syncSnapshot?.anchor : anchorCheck?.behind
        if let behindFleet { lines.append("STUCK: " + behindFleet) }
        // A recovery a command's check made stays said while the device is
        // at the generation it reached (a sync running since has nothing
        // of it to say; a later put-back moves the generation and hides it).
        if let recovered = anchorCheck?.recovered { lines.append("anchor check: " + recovered) }
        var held: [String] = []
        for ns in Namespace.allCases where ns != .devices {
            let c = try store.counts(ns)
            counts[ns.name] = ["rows": c.live, "tombstones": c.tombstones]
            held.append("\(c.live) \(ns.name)")
        }
        lines.append("holds " + held.joined(separator: ", "))
        // Saves and siblings' changes need room: a version, its WAL frames and
        // the copy the trash keeps of what it replaces.
        let disk = try? FileManager.default.attributesOfFileSystem(forPath: home.path)
        let free = (disk?[.systemFreeSize] as? NSNumber)?.int64Value
        if let free, free < StatusReport.lowDiskSpace {
            // Deleting notes frees pages inside the replica for later saves,
            // never room on the disk, and a deletion needs a little room too.
            let full = free < StatusReport.fullDisk
            var line = (full ? "DISK FULL" : "LOW DISK SPACE") + ": the disk holding this device has \(ByteText.text(Int(free))) free; "
                + (full ? "saves and siblings' changes fail until room is made on that disk (deleting notes does not give the disk room back)"
                        : "saves and siblings' changes will fail once it fills")
            let local = StatusReport.bytesUnder(home.scratchPath)
            if local >= StatusReport.fullDisk {
                line += "; files kept on this device only (editor and local-only files of the mounted folder) take "
                    + "\(ByteText.text(Int(local))) in \(home.scratchPath)"
            }
            lines.append(line)
        }
        let kinds = try store.notebookKinds()
        if (kinds[.file] ?? 0) + (kinds[.folder] ?? 0) > 0 {
            lines.append("the notebook is \(kinds[.note] ?? 0) notes, \(kinds[.file] ?? 0) attachments and \(kinds[.folder] ?? 0) folders")
        }
        counts["notebookKinds"] = ["notes": kinds[.note] ?? 0, "attachments": kinds[.file] ?? 0, "folders": kinds[.folder] ?? 0]
        let conflicted = try store.conflictedAttachments()
        if !conflicted.isEmpty {
            lines.append("\(conflicted.count) attachment\(conflicted.count == 1 ? " was" : "s were") edited on two devices at once; the later "
                         + "version keeps the name and each other one shows beside it as a conflict copy (name.sync-conflict-…): "
                         + conflicted.prefix(5).map { "notebook/…/\($0.name)" }.joined(separator: ", ") + (conflicted.count > 5 ? ", …" : "")
                         + ". Delete a copy to drop it, or rename it to keep it")
        }
        let pending = try store.pendingEdits()
        let devices = try store.counts(.devices).live
        // Read from the log itself, so it is said even with no sync running:
        // a revoked device's edits wait for nobody, whatever its outbox says.
        let roster = try Roster.load(from: store, accountKey: identity.account.publicKey).roster
        var revocation: [String: Any]?
        if let mine = roster[identity.deviceID], mine.isRevoked {
            let r = SyncStatus.Revocation(by: mine.revokedBy?.hex, byName: mine.revokedBy.flatMap { roster[$0]?.name },
                                          at: mine.revokedAt?.seconds, admissionVoid: mine.trust != .revoked)
            let unconfirmed = (try? store.unconfirmedWrites()) ?? 0
            let writes = "\(unconfirmed) write\(unconfirmed == 1 ? "" : "s") made here reached no other device"
            // The sync section below says the revocation when the running
            // sync knows it; said here only when it does not (not running).
            if SyncStatus.load(from: home)?.revocation == nil {
                lines.append(r.words + (unconfirmed > 0 ? "; " + writes : ""))
            } else if unconfirmed > 0 {
                lines.append(writes + " (this device was revoked: below)")
            }
            revocation = SyncStatusSection.revocationJSON(r)
        } else if devices <= 1 {
            lines.append("this is the account's only device ('quire invite' adds another)")
        } else {
            lines.append(pending == 0 ? "nothing waits to be advertised" : "\(pending) local edits wait to be advertised to siblings")
        }
        let merges = try store.mergeCount()
        lines.append("\(merges) concurrent merges done")
        if prefs.cloud == nil {
            lines.append("no cloud folder: this device cannot lead a tombstone collection nor notice by itself that it was put back "
                         + "from a backup ('quire config cloud DIR')")
        }
        if !prefs.backupEnabled {
            lines.append("the cloud anchor is off on this device: it never acks a barrier, which stops tombstone collection for the "
                         + "whole account ('quire config cloud-anchor on')")
        }
        let actor = try store.actor()
        let rollbacks = try store.rollbacks()
        if let last = rollbacks.first {
            lines.append("this device learned \(rollbacks.count == 1 ? "once" : "\(rollbacks.count) times") that it had been rolled back "
                         + "(put back from a copy of itself); the last time, \(DateText.format(last.at.seconds, time: true)): \(last.reason). "
                         + "It now writes as a new incarnation, so nothing it writes can be mistaken for what it wrote before")
        }
        let collisions = try store.collisions()
        if !collisions.isEmpty {
            let names = collisions.prefix(5).map { "\($0.namespace.name)/\($0.name.isEmpty ? $0.key.hex : $0.name)" }
            lines.append("\(collisions.count) rows hold two versions written under one device counter (a device put back from a copy "
                         + "wrote before it knew); both are kept and shown: " + names.joined(separator: ", ")
                         + (collisions.count > 5 ? ", …" : "") + ". Editing such a row joins them")
        }
        let damaged = try store.damagedBodies()
        let waiting = damaged.filter { $0.repairedAt == nil }
        if !waiting.isEmpty {
            lines.append("\(waiting.count) note bod\(waiting.count == 1 ? "y was" : "ies were") found damaged on disk and \(waiting.count == 1 ? "is" : "are") not shown: "
                         + waiting.prefix(5).map { "notebook/\($0.name)" }.joined(separator: ", ") + (waiting.count > 5 ? ", …" : "")
                         + "; a good copy comes back from a sibling or the homebase when the note is read, or with 'quire recall --all'")
        }
        if damaged.count > waiting.count {
            lines.append("\(damaged.count - waiting.count) damaged note bod\(damaged.count - waiting.count == 1 ? "y was" : "ies were") repaired from a good copy")
        }
        let json: [String: Any] = ["device": identity.deviceID.hex, "name": prefs.deviceName, "role": role.rawValue,
                                   "home": home.path, "generation": prefs.generation, "namespaces": counts,
                                   "behindFleet": behindFleet as Any, "anchorRecovered": anchorCheck?.recovered as Any,
                                   "diskFree": free.map { Int($0) } as Any,
                                   "outboxPending": pending, "merges": merges, "revoked": revocation as Any,
                                   "conflictedAttachments": conflicted.map { ["key": $0.key.hex, "name": $0.name] }, "account": Hex.encode(identity.userIDHash),
                                   "incarnation": String(actor.incarnation, radix: 16),
                                   // Writes no sibling has confirmed receiving (one a row and incarnation): this device's copy is the only one known.
                                   "unconfirmedWrites": (try? store.unconfirmedWrites()) ?? 0,
                                   "rollbacks": rollbacks.map { ["at": $0.at.seconds, "reason": $0.reason, "reissued": $0.reissued] as [String: Any] },
                                   "collisions": collisions.map { ["namespace": $0.namespace.name, "key": $0.key.hex, "dot": $0.dot] },
                                   "damagedBodies": damaged.map { ["key": $0.key.hex, "name": $0.name, "found": $0.foundAt.seconds,
                                                                   "repaired": $0.repairedAt.map { $0.seconds } as Any] }]
        return StatusReport(json: json, text: lines.joined(separator: "\n")).addingSync(home: home)
            .addingOffload(home: home, identity: identity, store: store)
            .addingTrash(store: store)
    }
}
