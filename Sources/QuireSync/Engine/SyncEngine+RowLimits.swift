import QuireCore
import QuireStore

/// Rows too large to travel (`RowLimits`), both ways. Ours are never sent
/// and are named in the status snapshot with the reason, until they change;
/// a sibling's are refused and counted.
extension SyncEngine {
    /// Remembers rows the responder left out, and says so once per row.
    func recordUnsendable(_ rows: [UnsendableRow], asked namespace: Namespace) {
        for item in rows {
            let id = RowID(namespace: item.row.namespace, key: item.row.key)
            if let known = unsyncable[id], known.reason == item.violation.description { continue }
            // Its leaf now, so the entry goes as soon as the row changes.
            let leaf = (try? store.leaves(id.namespace, from: id.key.bytes, to: id.key.bytes + [0]))?.first?.leaf
            let entry = UnsyncableRow(id: id, name: item.row.content?.displayName ?? "", leaf: leaf,
                                      reason: item.violation.description, since: clock.now().seconds)
            unsyncable[id] = entry
            note("\(entry.label) cannot sync: \(entry.reason); every other row still does")
        }
    }

    /// Forgets entries whose row changed since (edited, deleted, merged):
    /// if it still cannot travel, the next request that reaches it says so again.
    func revalidateUnsyncable() {
        for (id, entry) in unsyncable {
            let leaf = try? store.leaves(id.namespace, from: id.key.bytes, to: id.key.bytes + [0]).first?.leaf
            if leaf == nil || leaf! != entry.leaf { unsyncable[id] = nil }
        }
    }

    /// A sibling's rows that are within the limits; the others are refused,
    /// counted, and logged once per row.
    func rowsWithinLimits(_ rows: [Row], from sender: DeviceID) -> [Row] {
        rows.filter { row in
            guard let violation = RowLimits.check(row) else { return true }
            count(.rowOverLimit)
            let label = "\(row.namespace.name)/\(row.content.map { "'\($0.displayName)'" } ?? "?") (\(row.key.hex.prefix(12)))"
            if refusedOversize.insert("\(sender.hex) \(row.key.hex) \(violation)").inserted {
                if refusedOversize.count > 1_000 { refusedOversize.removeAll() }
                note("refused \(label) from \(name(of: sender)): \(violation)")
            }
            return false
        }
    }

    var unsyncableStatus: [SyncStatus.UnsyncableRow] {
        unsyncable.values.sorted { ($0.id.namespace, $0.id.key) < ($1.id.namespace, $1.id.key) }.map {
            SyncStatus.UnsyncableRow(namespace: $0.id.namespace.name, key: $0.id.key.hex, name: $0.name,
                                     reason: $0.reason, since: $0.since)
        }
    }
}

struct RowID: Hashable {
    let namespace: Namespace
    let key: RowKey
}

/// A row of ours that no message may carry.
struct UnsyncableRow {
    let id: RowID
    let name: String
    let leaf: [UInt8]?
    let reason: String
    let since: Int64

    var label: String {
        "\(id.namespace.name)/" + (name.isEmpty ? "" : "'\(name)' ") + "(\(id.key.hex.prefix(12)))"
    }
}
