import QuireCore
import QuireStore

/// A row as a directory entry: what stat and ls need, without the body.
struct ListedRow: Sendable {
    var key: RowKey
    var title: String
    var size: Int
    var updatedAt: Timestamp
    var isOffloaded: Bool
    var seq: Int64
    var kind: NoteKind
    /// The folder the row says it is in (see `NamespaceListing.folder(of:)`
    /// for where it is shown).
    var declaredFolder: RowKey?
    var modifiedAt: Int64?
    var versions: Int

    init(_ summary: RowSummary) {
        key = summary.key
        title = summary.name
        size = summary.size
        updatedAt = summary.updatedAt
        isOffloaded = summary.isOffloaded
        seq = summary.seq
        kind = summary.place.kind
        declaredFolder = summary.place.folder
        modifiedAt = summary.place.modifiedAt
        versions = summary.place.versions
    }

    var isFolder: Bool { kind == .folder }
}

/// Where a name is listed: a folder of the namespace (nil: its top) and
/// the name in it.
struct NameSlot: Hashable, Sendable {
    var folder: RowKey?
    var name: CanonicalName
}

/// A file name that appeared, moved or went away, for cache invalidation.
struct NameChange: Sendable, Equatable {
    var key: RowKey
    var old: NameSlot?
    var new: NameSlot?
}

/// The live rows of one namespace as file names in folders, kept up to date
/// one row at a time (a save must not cost a listing of 10,000 rows).
///
/// Rows that share a plain name in one folder form a group; the smallest
/// key keeps the plain name and the others get a key marker, so names are
/// deterministic on every device. Names are `CanonicalName`s: a row is
/// listed under the NFC form of its name whatever form its title is stored
/// in, and two titles that differ only in normalization share a group.
///
/// Only the notebook has folders. Where a row is shown is a pure function
/// of the live rows, the same on every device:
/// - in the folder it names, when that is a live folder row;
/// - at the top, when its folder was deleted (edit beats delete: a note
///   edited while its folder was removed elsewhere comes back at the top)
///   or has not arrived yet;
/// - folders whose parents form a cycle (two devices moved each into the
///   other) are cut at the folder with the smallest key, shown at the top.
///
/// One local exception: a row this mount has just created under a name
/// (`claimed`) goes first in its group here, so a same-named row arriving
/// from a sibling between its write and its rename (`x.new` renamed over
/// `x`) cannot take the name from under the program. The claim is short
/// (`NameIndex`); when it ends, the names are the deterministic ones again.
struct NamespaceListing: Sendable {
    let namespace: Namespace
    private(set) var rows: [RowKey: ListedRow] = [:]
    /// Where each row is listed.
    private(set) var slotOfKey: [RowKey: NameSlot] = [:]
    private var entries: [RowKey?: [CanonicalName: RowKey]] = [:]
    /// Rows by plain name per folder, sorted by key.
    private var groups: [NameSlot: [RowKey]] = [:]
    private var groupOfKey: [RowKey: (slot: NameSlot, stem: String, ext: String)] = [:]
    /// Folders shown at the top to cut a cycle.
    private var cycleCuts: Set<RowKey> = []
    /// Rows by the folder they name (live or not).
    private var declaredChildren: [RowKey: Set<RowKey>] = [:]
    /// Sorted names per folder for readdir: sorted once when first listed,
    /// then kept in order name by name (a catch-up adds thousands of names
    /// between two listings of a big folder; each must not sort them all).
    private var sortedNamesCache: [RowKey?: [CanonicalName]] = [:]
    /// Rows that keep the plain name of their group on this mount for now.
    private(set) var claimed: Set<RowKey> = []
    /// Rows created here under a name with their key marker (a backup of
    /// two same-titled notes copied back: `T.md` and `T%~1a2b3c4d.md`),
    /// which keep that name for now, so the plain name stays free for the
    /// copy's other file.
    private(set) var markedClaims: Set<RowKey> = []

    init(namespace: Namespace, summaries: [RowSummary]) {
        self.namespace = namespace
        for summary in summaries where !summary.isTombstone {
            rows[summary.key] = ListedRow(summary)
            if let folder = summary.place.folder { declaredChildren[folder, default: []].insert(summary.key) }
        }
        _ = relocateAll()
    }

    // MARK: Reading

    func key(named name: CanonicalName, in folder: RowKey?) -> RowKey? { entries[folder]?[name] }

    func row(named name: String, in folder: RowKey? = nil) -> ListedRow? {
        key(named: CanonicalName(name), in: folder).flatMap { rows[$0] }
    }

    func name(of key: RowKey) -> CanonicalName? { slotOfKey[key]?.name }

    /// The folder a row is shown in (nil: the top).
    func folder(of key: RowKey) -> RowKey? { slotOfKey[key]?.folder }

    func isFolder(_ key: RowKey) -> Bool { rows[key]?.isFolder == true }

    /// How many rows a folder shows.
    func count(in folder: RowKey?) -> Int { entries[folder]?.count ?? 0 }

    /// Attachments of a folder that hold concurrent versions (whose losing
    /// versions the folder shows as conflict copies).
    func conflicted(in folder: RowKey?) -> [RowKey] {
        (entries[folder] ?? [:]).values.filter { rows[$0].map { $0.kind == .file && $0.versions > 1 } ?? false }.sorted()
    }

    /// Whether `folder` is `key` or inside it (a folder cannot move there).
    func isWithin(_ folder: RowKey?, _ key: RowKey) -> Bool {
        var current = folder
        var steps = 0
        while let here = current, steps <= rows.count {
            if here == key { return true }
            current = slotOfKey[here]?.folder
            steps += 1
        }
        return false
    }

    mutating func sortedNames(in folder: RowKey?) -> [CanonicalName] {
        if let cached = sortedNamesCache[folder] { return cached }
        let names = (entries[folder] ?? [:]).keys.sorted()
        sortedNamesCache[folder] = names
        return names
    }

    /// Shows `key` under `name` in `folder` (the one place names are added).
    private mutating func setEntry(_ folder: RowKey?, _ name: CanonicalName, _ key: RowKey) {
        let isNew = entries[folder, default: [:]].updateValue(key, forKey: name) == nil
        guard isNew, var sorted = sortedNamesCache.removeValue(forKey: folder) else { return }
        sorted.insert(name, at: Self.insertionIndex(of: name, in: sorted))
        sortedNamesCache[folder] = sorted
    }

    /// Takes `name` out of `folder` (the one place names are removed).
    private mutating func clearEntry(_ folder: RowKey?, _ name: CanonicalName) {
        guard entries[folder]?.removeValue(forKey: name) != nil,
              var sorted = sortedNamesCache.removeValue(forKey: folder) else { return }
        let at = Self.insertionIndex(of: name, in: sorted)
        if at < sorted.count, sorted[at] == name { sorted.remove(at: at) }
        sortedNamesCache[folder] = sorted
    }

    /// The first index whose name is not before `name` (binary search).
    private static func insertionIndex(of name: CanonicalName, in sorted: [CanonicalName]) -> Int {
        var low = 0, high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if sorted[mid] < name { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Live rows of a folder whose title is `title` under the name rule
    /// (for names typed in another form, e.g. with escapes where none were needed).
    func keys(titled title: String, kind: NoteKind = .note, in folder: RowKey? = nil) -> [RowKey] {
        let parts = FileNames.nameParts(namespace: namespace, kind: kind, title: title, updatedAt: Timestamp(seconds: 0))
        let slot = NameSlot(folder: folder, name: CanonicalName(parts.stem + parts.ext))
        let wanted = CanonicalName(title)
        return (groups[slot] ?? []).filter { rows[$0].map { CanonicalName($0.title) == wanted && $0.kind == kind } ?? false }
    }

    // MARK: Changes

    /// Applies one row from the change feed or a local write.
    mutating func apply(_ summary: RowSummary) -> [NameChange] {
        if summary.isTombstone { return remove(summary.key) }
        let row = ListedRow(summary)
        let old = rows[row.key]
        rows[row.key] = row
        if old?.declaredFolder != row.declaredFolder {
            if let before = old?.declaredFolder { declaredChildren[before]?.remove(row.key) }
            if let after = row.declaredFolder { declaredChildren[after, default: []].insert(row.key) }
        }
        var changes = place(row.key)
        // A folder that appeared or went moves the rows that name it; one
        // that moved can make or break a cycle.
        if old?.isFolder != row.isFolder { changes += placeChildren(of: row.key) }
        if row.isFolder || old?.isFolder == true, old?.isFolder != row.isFolder || old?.declaredFolder != row.declaredFolder {
            changes += recutCycles()
        }
        return merged(changes)
    }

    mutating func remove(_ key: RowKey) -> [NameChange] {
        guard let row = rows.removeValue(forKey: key) else { return [] }
        if let folder = row.declaredFolder { declaredChildren[folder]?.remove(key) }
        var changes = unplace(key)
        if row.isFolder { changes += placeChildren(of: key) + recutCycles() }
        return merged(changes)
    }

    /// Places again the rows that name `folder` as theirs.
    private mutating func placeChildren(of folder: RowKey) -> [NameChange] {
        var changes: [NameChange] = []
        for child in (declaredChildren[folder] ?? []).sorted() { changes += place(child) }
        return changes
    }

    /// Recomputes the cycle cuts and places the folders whose cut changed.
    private mutating func recutCycles() -> [NameChange] {
        let cuts = Self.cycleCuts(rows)
        let changed = cuts.symmetricDifference(cycleCuts)
        cycleCuts = cuts
        var changes: [NameChange] = []
        for key in changed.sorted() { changes += place(key) }
        return changes
    }

    /// Gives `key` the first place in its group (or takes it back); the
    /// names that changed. A key not listed yet is placed first when it is.
    /// `keepsMarker`: the row keeps its marked name instead (`markedClaims`).
    mutating func setClaimed(_ key: RowKey, _ isClaimed: Bool, keepsMarker: Bool = false) -> [NameChange] {
        let changed: Bool
        if isClaimed {
            changed = keepsMarker ? markedClaims.insert(key).inserted : claimed.insert(key).inserted
        } else {
            let wasClaimed = claimed.remove(key) != nil, wasMarked = markedClaims.remove(key) != nil
            changed = wasClaimed || wasMarked
        }
        guard changed, let slot = groupOfKey[key]?.slot else { return [] }
        return merged(assignNames(slot))
    }

    // MARK: Placing rows

    /// Where a row belongs: its folder, if live and not cut, else the top.
    private func shownFolder(of row: ListedRow) -> RowKey? {
        guard namespace == .notebook, let folder = row.declaredFolder, rows[folder]?.isFolder == true else { return nil }
        if row.isFolder && cycleCuts.contains(row.key) { return nil }
        return folder
    }

    private func groupSlot(of row: ListedRow) -> (slot: NameSlot, stem: String, ext: String) {
        let parts = FileNames.nameParts(namespace: namespace, kind: row.kind, title: row.title, updatedAt: row.updatedAt)
        return (NameSlot(folder: shownFolder(of: row), name: CanonicalName(parts.stem + parts.ext)), parts.stem, parts.ext)
    }

    /// Puts a row in its group (moving it from its old one); the names that changed.
    private mutating func place(_ key: RowKey) -> [NameChange] {
        guard let row = rows[key] else { return [] }
        let target = groupSlot(of: row)
        if let current = groupOfKey[key], current.slot == target.slot, current.stem == target.stem, current.ext == target.ext { return [] }
        let changes = unplace(key, keepName: true)
        groupOfKey[key] = target
        var group = groups[target.slot] ?? []
        group.insert(key, at: group.firstIndex { key < $0 } ?? group.endIndex)
        groups[target.slot] = group
        return changes + assignNames(target.slot)
    }

    /// Takes a row out of its group. `keepName`: it is about to be placed
    /// again, so its old name is dropped by the reassignment, not here.
    private mutating func unplace(_ key: RowKey, keepName: Bool = false) -> [NameChange] {
        guard let current = groupOfKey.removeValue(forKey: key) else { return [] }
        groups[current.slot]?.removeAll { $0 == key }
        var changes: [NameChange] = []
        if let slot = slotOfKey[key] {
            // Free the name first, so the next row of the group can take it.
            if entries[slot.folder]?[slot.name] == key { clearEntry(slot.folder, slot.name) }
            if !keepName {
                slotOfKey[key] = nil
                changes.append(NameChange(key: key, old: slot, new: nil))
            }
        }
        return changes + assignNames(current.slot)
    }

    /// Places every row (a new listing).
    private mutating func relocateAll() -> [NameChange] {
        cycleCuts = Self.cycleCuts(rows)
        var changes: [NameChange] = []
        for key in rows.keys.sorted() { changes += place(key) }
        return changes
    }

    /// The folders to show at the top so that no folder is inside itself:
    /// in each cycle of folder parents, the one with the smallest key.
    static func cycleCuts(_ rows: [RowKey: ListedRow]) -> Set<RowKey> {
        var cuts: Set<RowKey> = []
        var settled: Set<RowKey> = []   // folders known to reach the top
        for start in rows.values.filter(\.isFolder).map(\.key).sorted() where !settled.contains(start) {
            var path: [RowKey] = []
            var onPath: Set<RowKey> = []
            var current: RowKey? = start
            while let key = current, let row = rows[key], row.isFolder, !settled.contains(key), !cuts.contains(key) {
                if onPath.contains(key) {
                    let cycle = path[path.firstIndex(of: key)!...]
                    cuts.insert(cycle.min()!)
                    break
                }
                path.append(key)
                onPath.insert(key)
                current = row.declaredFolder
            }
            settled.formUnion(path)
        }
        return cuts
    }

    /// Gives every row of a group its name; returns the names that changed.
    private mutating func assignNames(_ slot: NameSlot) -> [NameChange] {
        var keys = groups[slot] ?? []
        if keys.isEmpty { groups.removeValue(forKey: slot) }
        if keys.count > 1, !claimed.isEmpty, let first = keys.firstIndex(where: claimed.contains), first > 0 {
            keys.insert(keys.remove(at: first), at: 0)
        }
        if !markedClaims.isEmpty, keys.contains(where: markedClaims.contains) {
            keys = keys.filter { !markedClaims.contains($0) } + keys.filter(markedClaims.contains)
        }
        var changes: [NameChange] = []
        for (index, key) in keys.enumerated() {
            guard let parts = groupOfKey[key] else { continue }
            let isFirst = index == 0 && !markedClaims.contains(key)
            var name = CanonicalName(FileNames.name(stem: parts.stem, ext: parts.ext, key: key, isFirst: isFirst))
            if let holder = entries[slot.folder]?[name], holder != key, groupOfKey[holder]?.slot != slot {
                // Two 8-digit markers collided: fall back to the whole key.
                name = CanonicalName(FileNames.name(stem: parts.stem, ext: parts.ext, key: key, isFirst: false, longMarker: true))
            }
            let new = NameSlot(folder: slot.folder, name: name)
            let old = slotOfKey[key]
            guard old != new else {
                // Unplaced and placed again under the same name.
                if entries[slot.folder]?[name] != key { setEntry(slot.folder, name, key) }
                continue
            }
            if let old, entries[old.folder]?[old.name] == key { clearEntry(old.folder, old.name) }
            slotOfKey[key] = new
            setEntry(slot.folder, name, key)
            changes.append(NameChange(key: key, old: old, new: new))
        }
        return changes
    }

    /// One change per key: a name that moved twice in one update moved once.
    private func merged(_ changes: [NameChange]) -> [NameChange] {
        var order: [RowKey] = []
        var byKey: [RowKey: NameChange] = [:]
        for change in changes {
            if var existing = byKey[change.key] {
                existing.new = change.new
                byKey[change.key] = existing
            } else {
                order.append(change.key)
                byKey[change.key] = change
            }
        }
        return order.compactMap { byKey[$0] }.filter { $0.old != $0.new }
    }
}
