import QuireCore
import QuireStore

/// Holders checked at each new session of theirs. A holder put back from a
/// copy of its directory (`cp -a`, a VM snapshot) no longer holds what was
/// offloaded to it since the copy, and this device cleared its own copy of
/// those bodies when they were offloaded: the loss must be said when it
/// happens, not found by a read or `quire fsck` months later. A new session
/// is what a holder shows after every restart, its put-back included, so
/// at each one heard while this device runs it is asked which of this
/// device's offloaded bodies it still holds; what it lacks is named in the
/// status until a recall brings it back, a later audit finds it held, or
/// the note is no longer offloaded here.
extension SyncEngine {
    static let auditWaitMilliseconds: UInt64 = 60_000

    func auditHoldsIfNewSession(of holder: DeviceID, nowMs: UInt64) {
        guard configuration.auditsHolders, let session = link.newestSession(of: holder), offloadBook.auditedSessions[holder] != session,
              let member = roster[holder], !member.isRevoked else { return }
        // The first session heard since this engine started is where the
        // count begins: a holder is asked when it comes back while this
        // device runs (its restart, its put-back), not at every start here.
        let seenBefore = offloadBook.auditedSessions[holder] != nil
        offloadBook.auditedSessions[holder] = session
        if seenBefore { auditHolds(at: holder, isHomebase: member.role == "homebase", nowMs: nowMs) }
    }

    /// Asks `holder` about every offloaded body this device counts on it
    /// for (and, a homebase, about those with no holder recorded).
    private func auditHolds(at holder: DeviceID, isHomebase: Bool, nowMs: UInt64) {
        let notes: [OffloadedNote]
        do { notes = try store.offloadedNotes() } catch { report("reading offloaded notes to audit \(name(of: holder))", error); return }
        let items = notes.filter { $0.holders.contains(holder) || ($0.holders.isEmpty && isHomebase) }
            .map { HoldQuery.Item(contentHash: $0.contentHash, key: $0.key) }
        let asked = Set(items.map(\.contentHash))
        for (hash, missing) in offloadBook.missingBodies where missing.holder == holder && !asked.contains(hash) {
            offloadBook.missingBodies[hash] = nil   // no longer offloaded here (deleted, or recalled elsewhere)
        }
        for part in stride(from: 0, to: items.count, by: OffloadLimits.maxQueryItems) {
            let slice = Array(items[part..<min(items.count, part + OffloadLimits.maxQueryItems)])
            // Numbered, not drawn: an audit takes nothing from the engine's
            // random source, which a replayed history depends on.
            offloadBook.audits += 1
            let id = Array("audt".utf8) + withUnsafeBytes(of: offloadBook.audits.bigEndian) { Array($0) }
            offloadBook.queries[id] = PendingQuery(target: holder, items: slice, nextRetryMs: nowMs + offloadBook.timing.retryMilliseconds,
                                                   batch: nil, auditUntilMs: nowMs + Self.auditWaitMilliseconds)
            send(.holdQuery, HoldQuery(queryID: id, items: slice).encoded(), to: holder)
        }
    }

    func auditAnswered(_ items: [HoldQuery.Item], held: Set<[UInt8]>, by holder: DeviceID) {
        var lost: [String] = []
        for item in items {
            if held.contains(item.contentHash) {
                if offloadBook.missingBodies[item.contentHash]?.holder == holder { offloadBook.missingBodies[item.contentHash] = nil }
                continue
            }
            guard offloadBook.missingBodies[item.contentHash] == nil, let key = item.key,
                  case .note(let note)? = (try? store.row(.notebook, key))??.content, note.body == nil else { continue }
            offloadBook.missingBodies[item.contentHash] = (note.title, holder)
            lost.append("'\(note.title)'")
        }
        guard !lost.isEmpty else { return }
        note("\(name(of: holder)) no longer holds the offloaded bod\(lost.count == 1 ? "y" : "ies") of \(lost.prefix(5).joined(separator: ", "))"
             + (lost.count > 5 ? " and \(lost.count - 5) more" : "")
             + " (was it put back from a copy?): 'quire recall' asks every other device for a copy; 'quire fsck' lists them all")
    }

    /// The status's words on bodies a holder lost (nil: none).
    var missingBodyWarnings: [String]? {
        guard !offloadBook.missingBodies.isEmpty else { return nil }
        var byHolder: [DeviceID: [String]] = [:]
        for missing in offloadBook.missingBodies.values { byHolder[missing.holder, default: []].append(missing.title) }
        return byHolder.sorted { $0.key < $1.key }.map { holder, titles in
            let sorted = titles.sorted()
            return "\(titles.count) offloaded note bod\(titles.count == 1 ? "y is" : "ies are") no longer held by \(name(of: holder)), "
                + "which this device counted on (was it put back from a copy?), and not held here: "
                + sorted.prefix(5).map { "'\($0)'" }.joined(separator: ", ") + (sorted.count > 5 ? " and \(sorted.count - 5) more" : "")
                + "; 'quire recall --all' asks every other device for a copy"
        }
    }
}
