import Foundation
import QuireCore
import QuireFuse
import QuireStore

/// What a name in a folder stands for right now.
enum ResolvedName: Equatable {
    case row(RowRef)
    case scratch(Folder, CanonicalName)
    case none
}

/// A row renamed to a scratch name (vim and emacs rename a file to its
/// backup name, then write a new file under the old name).
struct DetachedRow {
    var title: String
    var name: CanonicalName
    /// The folder its name was in.
    var folder: Folder
    var since: Date
    /// The `NAME.bak` it was renamed to, a scratch copy meanwhile (see
    /// `RenameFacts.isBackupStep`): it becomes the row's file if the name
    /// does not come back, a file of its own if it does and the copy stays.
    var backup: ScratchPlace? = nil
}

/// Which name shows which row, and which inode number stands for what.
///
/// Three sources of names, in the order a lookup asks them: files created
/// through the mount and not yet committed (`pending`), the stored rows
/// (`listings`), and rows hidden because an editor renamed them to a
/// backup name (`detached`, never found by name). A row is pending under
/// one name at most, and a detached row is never pending.
///
/// A row created through this mount keeps its plain name against a
/// same-named row from a sibling while it is open and for a grace after
/// (`claims`, see `NamespaceListing`).
struct NameIndex {
    private(set) var listings: [Namespace: NamespaceListing] = [:]
    var inodes = InodeTable()
    private var pending: [Folder: [CanonicalName: RowRef]] = [:]
    private(set) var detached: [RowRef: DetachedRow] = [:]
    private var claims = GraceTable<RowRef>()
    /// Claims of rows created under their marked name (`NamespaceListing.markedClaims`).
    private var markedClaims: Set<RowRef> = []

    // MARK: Listings

    func listing(_ namespace: Namespace) -> NamespaceListing? { listings[namespace] }

    mutating func install(_ listing: NamespaceListing) {
        var listing = listing
        for ref in claims.keys where ref.namespace == listing.namespace {
            _ = listing.setClaimed(ref.key, true, keepsMarker: markedClaims.contains(ref))
        }
        listings[listing.namespace] = listing
    }

    /// A stored row changed (ours or anyone's): the names that moved.
    mutating func apply(_ summary: RowSummary) -> [Invalidation] { applyReporting(summary).invalidations }

    /// The same, with the names that came and went (what file watchers are told).
    mutating func applyReporting(_ summary: RowSummary) -> (invalidations: [Invalidation], changes: [NameChange]) {
        // Mutated in place: a copy would duplicate 10,000-entry tables per write.
        guard let changes = listings[summary.namespace]?.apply(summary) else { return ([], []) }
        return (invalidations(summary.namespace, changes), changes)
    }

    /// A row left the listing (replaced by a save by rename).
    mutating func unlist(_ ref: RowRef) -> [Invalidation] {
        guard let changes = listings[ref.namespace]?.remove(ref.key) else { return [] }
        return invalidations(ref.namespace, changes)
    }

    private func invalidations(_ namespace: Namespace, _ changes: [NameChange]) -> [Invalidation] {
        changes.flatMap { change in
            [change.old, change.new].compactMap { slot in
                slot.map { Invalidation.entry(parent: directoryInode(Folder(namespace, $0.folder)), name: $0.name) }
            }
        }
    }

    /// The inode number of a folder that lists rows.
    func directoryInode(_ folder: Folder) -> UInt64 {
        switch folder {
        case .root: return FuseInode.root.rawValue
        case .namespace(let namespace): return InodeTable.folderInode(namespace)
        case .subfolder(let key): return inodes.listedInode(of: RowRef(namespace: .notebook, key: key))
        }
    }

    /// The folder a row is shown in now.
    func folder(of ref: RowRef) -> Folder {
        if let slot = listings[ref.namespace]?.slotOfKey[ref.key] { return Folder(ref.namespace, slot.folder) }
        return pendingFolder(of: ref) ?? .namespace(ref.namespace)
    }

    /// Whether a row is a folder of the notebook tree.
    func isFolder(_ ref: RowRef) -> Bool { listings[ref.namespace]?.isFolder(ref.key) == true }

    // MARK: Resolving

    /// What a row name stands for in a folder; nil when the namespace is not listed yet.
    func resolveRow(_ name: CanonicalName, title: String, kind: NoteKind, in folder: Folder) -> ResolvedName? {
        guard let namespace = folder.namespace else { return ResolvedName.none }
        if let ref = pending[folder]?[name] { return .row(ref) }
        guard let listing = listings[namespace] else { return nil }
        if let key = listing.key(named: name, in: folder.folderKey) {
            let ref = RowRef(namespace: namespace, key: key)
            return detached[ref] == nil ? .row(ref) : ResolvedName.none
        }
        // The same title typed another way (an escape where none was needed).
        // Not a name with a key marker no row has: that names no row (a copy
        // of a twin), and taking the title's row would write over another file.
        guard !name.text.contains(FileNames.marker) else { return ResolvedName.none }
        // Nor a row keeping its marked name: the plain name is not its.
        let keys = listing.keys(titled: title, kind: kind, in: folder.folderKey)
            .filter { detached[RowRef(namespace: namespace, key: $0)] == nil && !listing.markedClaims.contains($0) }
        return keys.count == 1 ? .row(RowRef(namespace: namespace, key: keys[0])) : ResolvedName.none
    }

    /// The file name a row shows under right now (for messages and invalidation).
    func displayName(_ ref: RowRef) -> String {
        pendingName(of: ref)?.text ?? listings[ref.namespace]?.name(of: ref.key)?.text ?? ref.key.hex
    }

    func pendingName(of ref: RowRef) -> CanonicalName? { pendingSlot(of: ref)?.name }

    private func pendingFolder(of ref: RowRef) -> Folder? { pendingSlot(of: ref)?.folder }

    private func pendingSlot(of ref: RowRef) -> (folder: Folder, name: CanonicalName)? {
        for (folder, names) in pending where folder.namespace == ref.namespace {
            if let name = names.first(where: { $0.value == ref })?.key { return (folder, name) }
        }
        return nil
    }

    // MARK: Files not yet committed

    /// Names of files created and not committed, sorted, that no stored row shows.
    func pendingEntries(_ folder: Folder) -> [(name: CanonicalName, ref: RowRef)] {
        guard let namespace = folder.namespace else { return [] }
        return (pending[folder] ?? [:]).sorted { $0.key < $1.key }
            .filter { listings[namespace]?.key(named: $0.key, in: folder.folderKey) == nil }
            .map { ($0.key, $0.value) }
    }

    mutating func addPending(_ name: CanonicalName, in folder: Folder, _ ref: RowRef) {
        removePending(ref)
        pending[folder, default: [:]][name] = ref
    }

    /// The row is committed (listed now) or never will be.
    mutating func removePending(_ ref: RowRef) {
        guard let slot = pendingSlot(of: ref) else { return }
        pending[slot.folder]?[slot.name] = nil
        if pending[slot.folder]?.isEmpty == true { pending[slot.folder] = nil }
    }

    // MARK: Rows renamed away

    func isDetached(_ ref: RowRef) -> Bool { detached[ref] != nil }

    mutating func detach(_ ref: RowRef, _ row: DetachedRow) {
        removePending(ref)
        detached[ref] = row
    }

    /// Takes back a detached row; nil if it was not detached.
    @discardableResult
    mutating func reattach(_ ref: RowRef) -> DetachedRow? { detached.removeValue(forKey: ref) }

    /// The detached row of this folder whose title is `title`, if any.
    func detachedRow(titled title: String, in folder: Folder) -> RowRef? {
        detached.first { $0.value.folder == folder && CanonicalName.same($0.value.title, title) }?.key
    }

    /// Detached rows whose grace ended at `now`, and when the next one ends.
    func expiredDetached(at now: Date, grace: TimeInterval) -> [RowRef] {
        detached.filter { now.timeIntervalSince($0.value.since) > grace }.keys.sorted { $0.key < $1.key }
    }

    func nextDetachDeadline(grace: TimeInterval) -> Date? {
        detached.values.map { $0.since.addingTimeInterval(grace) }.min()
    }

    // MARK: Names this mount just created

    /// `ref` was created here under its name: it keeps that name for now.
    /// `keepingMarker`: it was created under its marked name, and keeps that.
    mutating func claim(_ ref: RowRef, at now: Date, keepingMarker: Bool = false) -> [Invalidation] {
        claims.renew(ref, at: now)
        if keepingMarker { markedClaims.insert(ref) }
        guard let changes = listings[ref.namespace]?.setClaimed(ref.key, true, keepsMarker: keepingMarker) else { return [] }
        return invalidations(ref.namespace, changes)
    }

    /// The claim's grace starts again (the row's last handle closed).
    mutating func renewClaim(_ ref: RowRef, at now: Date) {
        if claims.contains(ref) { claims.renew(ref, at: now) }
    }

    /// The claim ended: the row's name is the one every device gives it.
    mutating func endClaim(_ ref: RowRef) -> [Invalidation] { endClaimReporting(ref).invalidations }

    /// The same, with the names that changed hands (what file watchers are told).
    mutating func endClaimReporting(_ ref: RowRef) -> (invalidations: [Invalidation], changes: [NameChange]) {
        markedClaims.remove(ref)
        guard claims.remove(ref),
              let changes = listings[ref.namespace]?.setClaimed(ref.key, false) else { return ([], []) }
        return (invalidations(ref.namespace, changes), changes)
    }

    func isClaimed(_ ref: RowRef) -> Bool { claims.contains(ref) }

    /// When the claim on `ref` was made or last renewed (its file's last close).
    func claimRenewed(_ ref: RowRef) -> Date? { claims.renewedAt(ref) }

    /// Claims not renewed within `grace` of `now`.
    mutating func expiredClaims(at now: Date, grace: TimeInterval) -> [RowRef] {
        claims.expired(at: now, grace: grace).sorted { $0.key < $1.key }
    }

    func nextClaimDeadline(grace: TimeInterval) -> Date? { claims.nextDeadline(grace: grace) }

    // MARK: Sizes (status, tests)

    var pendingCount: Int { pending.values.reduce(0) { $0 + $1.count } }
}
