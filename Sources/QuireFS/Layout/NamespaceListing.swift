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

    init(_ summary: RowSummary) {
        key = summary.key
        title = summary.name
        size = summary.size
        updatedAt = summary.updatedAt
        isOffloaded = summary.isOffloaded
        seq = summary.seq
    }
}

/// A file name that appeared, moved or went away, for cache invalidation.
struct NameChange: Sendable, Equatable {
    var key: RowKey
    var oldName: CanonicalName?
    var newName: CanonicalName?
}

/// The live rows of one namespace as file names, kept up to date one row at
/// a time (a save must not cost a listing of 10,000 rows). Rows that share
/// a name stem form a group; the smallest key keeps the plain name and the
/// others get a key marker, so names are deterministic on every device.
///
/// Names and stems are `CanonicalName`s: a row is listed under the NFC form
/// of its name whatever form its title is stored in, found by any form, and
/// two rows whose titles differ only in normalization share a stem (one
/// keeps the plain name, the other is marked), so no two entries look alike.
struct NamespaceListing: Sendable {
    let namespace: Namespace
    private(set) var rows: [RowKey: ListedRow] = [:]
    /// The name each row is listed under (NFC).
    private(set) var nameOfKey: [RowKey: CanonicalName] = [:]
    private(set) var keyOfName: [CanonicalName: RowKey] = [:]
    private var groups: [CanonicalName: [RowKey]] = [:]
    private var stemOfKey: [RowKey: CanonicalName] = [:]
    /// Sorted names, rebuilt lazily for readdir.
    private var sortedNamesCache: [CanonicalName]?

    init(namespace: Namespace, summaries: [RowSummary]) {
        self.namespace = namespace
        for summary in summaries where !summary.isTombstone {
            let row = ListedRow(summary)
            rows[row.key] = row
            let stem = CanonicalName(FileNames.stem(namespace: namespace, title: row.title, updatedAt: row.updatedAt))
            stemOfKey[row.key] = stem
            groups[stem, default: []].append(row.key)
        }
        for stem in groups.keys {
            groups[stem]!.sort()
            _ = assignNames(stem)
        }
    }

    var sortedNames: [CanonicalName] {
        mutating get {
            if let sortedNamesCache { return sortedNamesCache }
            let names = keyOfName.keys.sorted()
            sortedNamesCache = names
            return names
        }
    }

    /// The row a name (in any normalization form) is listed under.
    func key(named name: CanonicalName) -> RowKey? { keyOfName[name] }

    func row(named name: String) -> ListedRow? { keyOfName[CanonicalName(name)].flatMap { rows[$0] } }

    /// Live rows whose title is `title` under the name rule (for names
    /// typed in another form, e.g. with escapes where none were needed).
    func keys(titled title: String) -> [RowKey] {
        let stem = CanonicalName(FileNames.stem(namespace: namespace, title: title, updatedAt: Timestamp(seconds: 0)))
        let wanted = CanonicalName(title)
        return (groups[stem] ?? []).filter { rows[$0].map { CanonicalName($0.title) == wanted } ?? false }
    }

    /// Applies one row from the change feed or a local write.
    mutating func apply(_ summary: RowSummary) -> [NameChange] {
        if summary.isTombstone { return remove(summary.key) }
        let row = ListedRow(summary)
        let newStem = CanonicalName(FileNames.stem(namespace: namespace, title: row.title, updatedAt: row.updatedAt))
        let oldStem = stemOfKey[row.key]
        rows[row.key] = row
        if oldStem == newStem { return [] }
        var changes: [NameChange] = []
        if let oldStem {
            groups[oldStem]?.removeAll { $0 == row.key }
            changes += assignNames(oldStem)
        }
        stemOfKey[row.key] = newStem
        var group = groups[newStem] ?? []
        group.insert(row.key, at: group.firstIndex { row.key < $0 } ?? group.endIndex)
        groups[newStem] = group
        changes += assignNames(newStem)
        return merged(changes)
    }

    mutating func remove(_ key: RowKey) -> [NameChange] {
        guard rows.removeValue(forKey: key) != nil, let stem = stemOfKey.removeValue(forKey: key) else { return [] }
        groups[stem]?.removeAll { $0 == key }
        // Free the name first, so the next row of the group can take it.
        var changes: [NameChange] = []
        if let name = nameOfKey.removeValue(forKey: key) {
            if keyOfName[name] == key { keyOfName.removeValue(forKey: name) }
            changes.append(NameChange(key: key, oldName: name, newName: nil))
            sortedNamesCache = nil
        }
        return merged(changes + assignNames(stem))
    }

    /// Gives every row of a group its name; returns the names that changed.
    private mutating func assignNames(_ stem: CanonicalName) -> [NameChange] {
        let keys = groups[stem] ?? []
        if keys.isEmpty { groups.removeValue(forKey: stem) }
        var changes: [NameChange] = []
        for (index, key) in keys.enumerated() {
            var name = CanonicalName(FileNames.name(stem: stem.text, namespace: namespace, key: key, isFirst: index == 0))
            if let holder = keyOfName[name], holder != key, stemOfKey[holder] != stem {
                // Two 8-digit markers collided: fall back to the whole key.
                name = CanonicalName(FileNames.name(stem: stem.text, namespace: namespace, key: key, isFirst: false, longMarker: true))
            }
            let old = nameOfKey[key]
            guard old != name else { continue }
            if let old, keyOfName[old] == key { keyOfName.removeValue(forKey: old) }
            nameOfKey[key] = name
            keyOfName[name] = key
            sortedNamesCache = nil
            changes.append(NameChange(key: key, oldName: old, newName: name))
        }
        return changes
    }

    /// One change per key: a name that moved twice in one update moved once.
    private func merged(_ changes: [NameChange]) -> [NameChange] {
        var order: [RowKey] = []
        var byKey: [RowKey: NameChange] = [:]
        for change in changes {
            if var existing = byKey[change.key] {
                existing.newName = change.newName
                byKey[change.key] = existing
            } else {
                order.append(change.key)
                byKey[change.key] = change
            }
        }
        return order.compactMap { byKey[$0] }.filter { $0.oldName != $0.newName }
    }
}
