import QuireCore

/// A row across the fleet.
public struct RowRef: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let namespace: Namespace
    public let key: RowKey

    public init(_ namespace: Namespace, _ key: RowKey) {
        self.namespace = namespace
        self.key = key
    }

    public static func < (a: RowRef, b: RowRef) -> Bool {
        a.namespace != b.namespace ? a.namespace < b.namespace : a.key < b.key
    }

    public var description: String { "\(namespace.name)/\(key.hex.prefix(8))" }
}

/// One committed local write (an edit or a delete), as the model saw it.
public struct WriteRecord: Sendable {
    public let id: Int
    public let step: Int?
    public let slot: Int
    public let deviceName: String
    public let row: RowRef
    public let isDelete: Bool
    public let dot: Dot
    /// The writer's own entry in the model's causal clock after this write.
    public let causalCount: Int
    /// Writes of the same row it had seen: in the writer's row history and
    /// able to have reached the writer (see `HistoryModel`).
    public let seen: Set<Int>
    /// The single value it wrote (a setting's value, a plan's or contact's
    /// note, a note's title): unique per write, so a shown value names its write.
    public let token: String?
    /// The paragraphs of the prose it wrote (note body, journal day).
    public let paragraphs: [String]
    /// Paragraphs the person removed or rewrote in this edit (deliberately deleted).
    public let removedParagraphs: [String]
    /// The wall-clock second the row's content was stamped with (edits).
    public let stamp: Int64?
    /// The tag of the version it wrote (tells it from another write a
    /// copied-back device made under the same dot).
    public var tag: UInt64? = nil

    public var label: String { "#w\(id)" }
}

/// What the fleet was asked to do and what each device had seen when it
/// did it: the oracle the lost-write and one-dot-one-content checks use.
///
/// "Had seen" is exact, not what the replica claims alone. A write w is
/// seen by a later write e of the same row when both hold:
///  - e's row history covers w's dot (the replica's claim, read through
///    `RowObservation` before e was made), and
///  - w could have reached e's device: the model keeps its own causal
///    clock, carried by every frame on the simulated network (a frame
///    delivered joins the sender's clock into the receiver's), so a dot
///    that was re-minted by a device copied back from its backup is not
///    credited to a sibling that never heard from it since.
public final class HistoryModel: @unchecked Sendable {
    public private(set) var writes: [WriteRecord] = []
    public private(set) var writesByRow: [RowRef: [Int]] = [:]
    /// Writes a restore took back before any other device had them: the
    /// person rolled the device back past them, so nothing owes them.
    public private(set) var rolledBack = Set<Int>()
    /// Invariant 7: every dot minted, per row, with what it tagged.
    private var minted: [RowRef: [Dot: (fingerprint: [UInt8], write: Int)]] = [:]
    public private(set) var dotCollisions: [String] = []
    /// Dots minted twice by a device put back by a raw copy before it could
    /// know (no outside signal exists then): reported, not failures, since
    /// both versions must still survive (the lost-write check holds them to it).
    public private(set) var copyBackCollisions: [String] = []
    private var copyBackRows = Set<RowRef>()

    /// Whether a device put back by a raw copy minted a dot twice on `row`.
    public func hasCopyBackCollision(_ row: RowRef) -> Bool { copyBackRows.contains(row) }

    /// Per slot, the write count at its last raw copy-back.
    private var copiedBackAt: [Int: Int] = [:]
    public private(set) var dotsChecked = 0
    /// The model's causal clock per device slot (count of writes known, per slot).
    private var causal: [[Int]] = []
    private var tokenCounter = 0
    public static let maxSlots = 8

    public init() {
        causal = Array(repeating: Array(repeating: 0, count: HistoryModel.maxSlots), count: HistoryModel.maxSlots)
    }

    // MARK: Causality carried by frames

    public func stamp(of slot: Int) -> [Int] { causal[slot] }

    public func delivered(to slot: Int, tag: [Int]) {
        guard tag.count == HistoryModel.maxSlots else { return }
        for i in 0..<HistoryModel.maxSlots where tag[i] > causal[slot][i] { causal[slot][i] = tag[i] }
    }

    // MARK: Fresh values

    /// A token no write used before ("v17").
    public func freshToken(_ prefix: String = "v") -> String {
        tokenCounter += 1
        return "\(prefix)\(tokenCounter)"
    }

    // MARK: Writes

    /// The writes of `row` that a write by `slot` against `before` (the row
    /// as that device holds it now) would have seen.
    public func seen(by slot: Int, row: RowRef, before: Row?) -> Set<Int> {
        var out = Set<Int>()
        for id in writesByRow[row] ?? [] {
            let w = writes[id]
            if causal[slot][w.slot] >= w.causalCount && RowObservation.covers(before, w.dot) { out.insert(id) }
        }
        return out
    }

    /// Records a committed local write; nil if it made no new version.
    @discardableResult
    public func record(step: Int?, slot: Int, deviceName: String, deviceID: DeviceID, row: RowRef, before: Row?, after: Row,
                       isDelete: Bool, token: String?, paragraphs: [String], removedParagraphs: [String] = [],
                       stamp: Int64? = nil) -> WriteRecord? {
        guard let dot = RowObservation.mintedDot(by: deviceID, before: before, after: after) else { return nil }
        let seen = self.seen(by: slot, row: row, before: before)
        causal[slot][slot] += 1
        var record = WriteRecord(id: writes.count, step: step, slot: slot, deviceName: deviceName, row: row, isDelete: isDelete,
                                 dot: dot, causalCount: causal[slot][slot], seen: seen, token: token, paragraphs: paragraphs,
                                 removedParagraphs: removedParagraphs, stamp: stamp)
        record.tag = after.heads.first { $0.dot == dot }?.tag
        writes.append(record)
        writesByRow[row, default: []].append(record.id)
        let fingerprint = RowObservation.fingerprint(of: after)
        dotsChecked += 1
        if let earlier = minted[row]?[dot] {
            if earlier.fingerprint != fingerprint {
                let first = writes[earlier.write]
                if let at = copiedBackAt[slot], at > earlier.write {
                    copyBackRows.insert(row)
                    copyBackCollisions.append("\(row): \(deviceName) re-minted (\(deviceName), \(dot.counter)) at \(record.label) after a copy-back")
                    return record
                }
                dotCollisions.append("\(row): \(deviceName) minted (\(deviceName), \(dot.counter)) at \(record.label) (step \(step.map(String.init) ?? "-")), "
                                     + "already minted at \(first.label) (step \(first.step.map(String.init) ?? "-")) with other content")
            }
        } else {
            minted[row, default: [:]][dot] = (fingerprint, record.id)
        }
        return record
    }

    public func markRolledBack(_ ids: [Int]) { rolledBack.formUnion(ids) }

    /// Writes marked taken back that reached another device after all (a
    /// frame sent before the restore, still in flight), or that a newer
    /// copy of their device put back: they stand.
    public func unmarkRolledBack(_ ids: [Int]) { rolledBack.subtract(ids) }

    /// Whether the device in `slot` was ever put back by a raw copy.
    public func wasCopiedBack(slot: Int) -> Bool { copiedBackAt[slot] != nil }

    /// A device was put back by a raw copy of its directory.
    public func noteCopiedBack(slot: Int) { copiedBackAt[slot] = writes.count }

    /// The writes of `row` that happened as far as the fleet is concerned.
    private func standing(_ row: RowRef) -> [Int] { (writesByRow[row] ?? []).filter { !rolledBack.contains($0) } }

    /// Paragraphs a person deliberately removed or rewrote in `row`.
    public func deletedParagraphs(of row: RowRef) -> Set<String> {
        Set(standing(row).flatMap { writes[$0].removedParagraphs })
    }

    /// The writes to `row` no later write that had seen them replaced.
    public func unsupersededWrites(of row: RowRef) -> [WriteRecord] {
        let ids = standing(row)
        var superseded = Set<Int>()
        for id in ids { superseded.formUnion(writes[id].seen) }
        return ids.filter { !superseded.contains($0) }.map { writes[$0] }
    }

    /// Edits of `row` that no delete had seen (their paragraphs must live on).
    public func editsNoDeleteSaw(of row: RowRef) -> [WriteRecord] {
        let ids = standing(row)
        var deleted = Set<Int>()
        for id in ids where writes[id].isDelete { deleted.formUnion(writes[id].seen) }
        return ids.filter { !writes[$0].isDelete && !deleted.contains($0) }.map { writes[$0] }
    }

    /// Issue 10, #1: histories whose outcome today's row model lets the
    /// order of meetings decide, because a merge keeps one value under the
    /// joined vector and forgets what a delete had seen. True if a new
    /// write by a device that has seen `seen` would complete one of them:
    ///  (a) a delete that saw an edit s, and an edit u concurrent with both
    ///      (u and s meet first: s may win, and then beats the delete too);
    ///  (b) a delete t, an edit x concurrent with it, and another delete z
    ///      that saw x but not t (x beats t; the join then looks concurrent
    ///      with z, so x beats z as well, though z had seen it).
    public func completesThreeWayEditDelete(row: RowRef, seen: Set<Int>, isDelete: Bool) -> Bool {
        let ids = standing(row)
        func concurrent(_ a: Int, _ b: Int) -> Bool { !writes[a].seen.contains(b) && !writes[b].seen.contains(a) }
        let edits = ids.filter { !writes[$0].isDelete }, deletes = ids.filter { writes[$0].isDelete }
        if isDelete {
            // (a) as the delete: an unseen edit u concurrent with a seen edit s.
            for u in edits where !seen.contains(u) {
                if seen.contains(where: { s in !writes[s].isDelete && concurrent(u, s) }) { return true }
            }
            // (b) as t: an unseen edit x that an unseen delete z saw.
            for x in edits where !seen.contains(x) {
                if deletes.contains(where: { z in !seen.contains(z) && writes[z].seen.contains(x) }) { return true }
            }
            // (b) as z: a seen edit x concurrent with an unseen delete t.
            for t in deletes where !seen.contains(t) {
                if seen.contains(where: { x in !writes[x].isDelete && concurrent(x, t) }) { return true }
            }
            return false
        }
        // (a) as u: an unseen delete that saw an edit this one does not see.
        for d in deletes where !seen.contains(d) {
            if writes[d].seen.contains(where: { s in !writes[s].isDelete && !seen.contains(s) }) { return true }
        }
        return false
    }

    /// Issue 10, #1 again, by a stamp tie: s, an edit r that saw s and
    /// carries the same stamp (same second, or a clock behind: a local edit
    /// is never stamped earlier than what it replaces), and a write u (an
    /// edit or a delete) concurrent with both. If s and u meet first and s
    /// survives (it wins over u, or beats u as an edit beats a delete), the
    /// join looks concurrent with r, and r can lose the tie to the very
    /// value it replaced. True if a new write seeing `seen` would complete
    /// the shape: as r (an edit to be stamped `stamp`) or as u.
    public func completesTiedStampEdits(row: RowRef, seen: Set<Int>, stamp: Int64?) -> Bool {
        let ids = standing(row)
        let edits = ids.filter { !writes[$0].isDelete }
        if let stamp {
            // As r: a seen edit s with the same stamp, and an unseen write u that did not see s.
            for s in seen where !writes[s].isDelete && writes[s].stamp == stamp {
                if ids.contains(where: { u in !seen.contains(u) && u != s && !writes[u].seen.contains(s) }) { return true }
            }
        }
        // As u: an unseen edit r that saw an unseen edit s with r's stamp.
        for r in edits where !seen.contains(r) {
            guard let rStamp = writes[r].stamp else { continue }
            if writes[r].seen.contains(where: { s in !writes[s].isDelete && !seen.contains(s) && writes[s].stamp == rStamp }) { return true }
        }
        return false
    }

    public var rows: [RowRef] { writesByRow.keys.sorted() }
}
