import Foundation
import QuireCore
import QuireStore
import QuireSync

/// How many copies each offloaded body was required to have, for fsck.
/// Device-local (a per-device fact, like residency): `<home>/offload-copies.json`,
/// content hash (hex) → copies.
struct OffloadCopiesFile {
    let home: DeviceHome
    var path: String { home.offloadCopiesPath }

    func load() -> [String: Int] {
        guard let data = FileManager.default.contents(atPath: path),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Int] else { return [:] }
        return object
    }

    /// The copies `note` was offloaded with (1 when not recorded: the default).
    static func required(_ note: OffloadedNote, in map: [String: Int]) -> Int {
        map[Hex.encode(note.contentHash)] ?? 1
    }

    func record(_ entries: [(RowKey, Int)], store: ReplicaStore) {
        var map = load()
        let hashes = Dictionary(((try? store.offloadedNotes()) ?? []).map { ($0.key, Hex.encode($0.contentHash)) }, uniquingKeysWith: { a, _ in a })
        let live = Set(hashes.values)
        map = map.filter { live.contains($0.key) }
        for (key, copies) in entries { if let h = hashes[key] { map[h] = copies } }
        if let data = try? JSONSerialization.data(withJSONObject: map, options: [.sortedKeys]) {
            try? AtomicFile.write(Array(data), to: path, mode: 0o600)
        }
    }
}

/// Offloaded notes that counted a copy on a device the roster has since
/// revoked. A revoked device's copy counts for nothing: its frames are
/// refused, so it can never be asked, and whoever holds it now is not the
/// account. A note whose other holders are fewer than the copies it was
/// offloaded with has lost the redundancy its offload promised, until it
/// is recalled ('quire recall --below-copies') or its device is trusted
/// again. Nothing here asks the network: holders as recorded, trust as the
/// roster says.
struct RevokedCopies {
    struct Entry {
        let note: OffloadedNote
        let required: Int
        /// Recorded holders the roster still trusts (or does not know yet).
        let kept: [DeviceID]
        let revoked: [DeviceID]
        var isBelowRequired: Bool { kept.count < required }
    }

    /// Only the notes with at least one revoked holder, in key order.
    let entries: [Entry]

    init(offloaded: [OffloadedNote], roster: Roster?, required: [String: Int]) {
        guard let roster else { entries = []; return }
        entries = offloaded.compactMap { note in
            let revoked = note.holders.filter { roster[$0]?.isRevoked == true }
            guard !revoked.isEmpty else { return nil }
            return Entry(note: note, required: OffloadCopiesFile.required(note, in: required),
                         kept: note.holders.filter { !revoked.contains($0) }, revoked: revoked)
        }
    }

    /// Loaded from the device's replica, roster and copies file.
    init(store: ReplicaStore, identity: Identity, home: DeviceHome) throws {
        let roster = try Roster.load(from: store, accountKey: identity.account.publicKey).roster
        self.init(offloaded: try store.offloadedNotes(), roster: roster, required: OffloadCopiesFile(home: home).load())
    }

    var belowRequired: [Entry] { entries.filter(\.isBelowRequired) }

    /// Per revoked holder, in id order: the notes that counted its copy, how
    /// many of them are now below their required copies, and how many have
    /// no other recorded holder at all.
    var byHolder: [(holder: DeviceID, notes: Int, below: Int, noneLeft: Int)] {
        var tally: [DeviceID: (notes: Int, below: Int, noneLeft: Int)] = [:]
        for e in entries {
            for h in e.revoked {
                var t = tally[h] ?? (0, 0, 0)
                t.notes += 1
                if e.isBelowRequired { t.below += 1 }
                if e.kept.isEmpty { t.noneLeft += 1 }
                tally[h] = t
            }
        }
        return tally.sorted { $0.key < $1.key }.map { (holder: $0.key, notes: $0.value.notes, below: $0.value.below, noneLeft: $0.value.noneLeft) }
    }

    /// One line per revoked holder, for `quire status`.
    func lines(name: (DeviceID) -> String) -> [String] {
        byHolder.map { h in
            var text = "holder \(name(h.holder)) REVOKED: \(h.notes) offloaded note\(h.notes == 1 ? "" : "s") counted a copy there, which counts no more"
            if h.below > 0 {
                text += "; \(h.below) \(h.below == 1 ? "is" : "are") now below the copies \(h.below == 1 ? "it was" : "they were") offloaded with"
                if h.noneLeft > 0 { text += " (\(h.noneLeft) with no other holder: a recall asks every device)" }
                text += ": 'quire recall --below-copies' brings \(h.below == 1 ? "it" : "them") back here"
            }
            return text
        }
    }
}
