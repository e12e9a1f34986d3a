import QuireCore
import QuireFuse

/// A file in the scratch area.
struct ScratchPlace: Hashable, Sendable {
    var folder: Folder
    var name: CanonicalName
}

/// rename(2) as the kernel asks it, names in NFC.
struct RenameRequest: Equatable {
    var from: Folder
    var name: CanonicalName
    var to: Folder
    var newName: CanonicalName
    var flags: FuseRenameFlags
}

/// What the tables say about the names a rename touches, gathered by
/// `QuireFileSystem` before planning (the planner reads nothing else).
struct RenameFacts {
    var source: ResolvedName
    var target: ResolvedName
    /// The inode numbers the kernel knows the two names by (nil: no file).
    var sourceInode: UInt64?
    var targetInode: UInt64?
    /// Rows created through the mount and never committed: no stored row
    /// exists, so there is nothing to tombstone or retitle in the store.
    var newRows: Set<RowRef> = []
    /// The title the source row shows (its open copy's, else its listed one).
    var sourceTitle = ""
    /// A detached row titled like the new name, which a file renamed onto
    /// that name takes back (an editor's backup step undone).
    var reclaimable: RowRef?
    /// A note renamed to its name plus `.bak` (Python's `fileinput` and
    /// `perl -i.bak` edit so: the backup, then a new file of the name,
    /// then the backup removed): an editor's backup step, as `NAME~` is.
    var isBackupStep = false
    /// A notebook row removed a moment ago under the new name and still
    /// deleted (`RecentlyRemoved`): a file renamed onto that name writes it
    /// again, as a file created under it does (zip, and programs that remove
    /// a file before renaming its new text over the name).
    var removedAgain: RowRef?
    /// A note a sibling moved away from the new name (`MovedAway`), which
    /// this save by rename writes where it is now; it stands as the target.
    var movedAway: RowRef?
    /// A key for a row the rename creates, if it creates one.
    var freshKey: RowKey
    /// It starts with the new name's key marker (`newRowKey`).
    var freshKeyKeepsMarker = false
    /// Notebook folders: whether each name is one, whether the target
    /// folder is empty, and whether the destination folder is the source
    /// folder or inside it.
    var sourceIsFolder = false
    var targetIsFolder = false
    var targetFolderIsEmpty = true
    var destinationWithinSource = false
    /// A `.quireignore` rule keeps the new name on this device.
    var targetIgnored = false
}

/// Where a notebook row goes: its kind (a rename to or from `.md` makes a
/// note an attachment or back) and its folder.
struct Placement: Equatable {
    var kind: NoteKind
    var folder: RowKey?
}

/// A rename as three lists of changes, applied in order: the store (one
/// transaction), then scratch files, then the tables. Bytes are named by
/// where they are read from, and read once, before anything changes.
struct RenamePlan: Equatable {
    enum Bytes: Hashable {
        /// What the row's file shows now (its open copy, else stored).
        case row(RowRef)
        case scratch(ScratchPlace)
    }

    enum StoreChange: Equatable {
        /// `bytes` become a new version of `target` (created if needed,
        /// titled `title` and placed at `placement` if given); `removing`
        /// becomes a tombstone.
        case replace(target: RowRef, title: String?, bytes: Bytes, removing: RowRef?, sourceName: String, placement: Placement? = nil)
        case retitle(RowRef, title: String, placement: Placement? = nil)
        /// A notebook folder gets a new name or parent (one row changes:
        /// everything inside keeps its key); `replacing`, an empty folder
        /// at the new name, becomes a tombstone in the same transaction.
        case moveFolder(RowRef, title: String, into: RowKey?, replacing: RowRef?)
        /// Each row gets the other's text; both edits in one transaction.
        case exchange(RowRef, RowRef)
    }

    enum ScratchChange: Equatable {
        case rename(from: ScratchPlace, to: ScratchPlace, flags: UInt32)
        case write(ScratchPlace, Bytes)
        /// Best effort: the rename already happened in the store.
        case remove(ScratchPlace)
    }

    enum TableChange: Equatable {
        /// The kernel moved `inode` to a name that shows `object` now.
        case repoint(inode: UInt64, to: NodeObject)
        /// Files open on `inode` now write `ref`.
        case moveOpenFiles(inode: UInt64, to: RowRef)
        /// RENAME_EXCHANGE of two rows: open files and copies go with their inodes.
        case swapOpenFiles(UInt64, UInt64, RowRef, RowRef)
        /// The row's file was replaced: its open files keep their text.
        case orphanOpenFiles(RowRef)
        /// Files open on `ref` follow it to a scratch file holding `text`.
        case moveRowHandlesToScratch(RowRef, ScratchPlace, text: Bytes)
        /// Files open on the scratch file `inode` follow it into `ref`.
        case adoptScratchHandles(inode: UInt64, to: RowRef)
        case renamePending(RowRef, to: CanonicalName, in: Folder, title: String, placement: Placement? = nil)
        case retitleCopy(RowRef, title: String, placement: Placement? = nil)
        case forgetPending(RowRef)
        case markClean(RowRef)
        /// The source of a save by rename is gone: not pending, not listed,
        /// and its copy has nothing left to commit.
        case settleReplacedSource(RowRef)
        case detach(RowRef, title: String, name: CanonicalName, folder: Folder, backup: ScratchPlace? = nil)
    }

    /// A detached row the rename takes back, before the store change: if
    /// the save fails, the row shows again under its old name instead of
    /// being deleted when its grace ends.
    var reclaim: RowRef?
    var store: StoreChange?
    var scratch: [ScratchChange] = []
    var tables: [TableChange] = []

    /// Every byte source the plan reads.
    var byteSources: [Bytes] {
        var sources: [Bytes] = []
        switch store {
        case .replace(_, _, let bytes, _, _, _)?: sources.append(bytes)
        case .exchange(let a, let b)?: sources += [.row(a), .row(b)]
        case .retitle?, .moveFolder?, nil: break
        }
        for case .write(_, let bytes) in scratch { sources.append(bytes) }
        for case .moveRowHandlesToScratch(_, _, let bytes) in tables { sources.append(bytes) }
        var seen = Set<Bytes>()
        return sources.filter { seen.insert($0).inserted }
    }
}

/// Why a rename is refused; `message` goes to the log and the status.
struct RenameRefusal: Error, Equatable {
    var error: FuseError
    var message: String?

    init(_ error: FuseError, _ message: String? = nil) {
        self.error = error
        self.message = message
    }
}

/// Plans a rename from the tables' state alone: no store, no scratch
/// files, no clock. The kernel moves an inode along with its name, so each
/// plan re-points the inode now at a name to what that name shows, and
/// open files follow their inodes.
enum RenamePlanner {
    static func plan(_ request: RenameRequest, _ facts: RenameFacts) throws(RenameRefusal) -> RenamePlan {
        let flags = request.flags
        if flags.contains(.whiteout) || (flags.contains(.noReplace) && flags.contains(.exchange)) { throw RenameRefusal(.invalid) }
        // The stored (NFC) form must fit: it can be longer than the typed one.
        let newName = request.newName
        guard newName.text.utf8.count <= FileNames.maximumNameBytes else {
            throw RenameRefusal(.nameTooLong, "rename to \(newName.text.prefix(40))… refused: a name is at most 255 bytes in NFC "
                                + "(\(newName.text.utf8.count) given)")
        }
        if facts.source == .none { throw RenameRefusal(.noEntry) }
        if flags.contains(.noReplace) && facts.target != .none { throw RenameRefusal(.exists) }
        if flags.contains(.exchange) && facts.target == .none { throw RenameRefusal(.noEntry) }
        if facts.source == facts.target { return RenamePlan() }

        var target: (title: String, kind: NoteKind)? = nil
        if let namespace = request.to.namespace, case .row(let title, let kind) = FileNames.meaning(of: newName, in: namespace),
           !facts.targetIgnored {
            target = (title, kind)
        }
        let involvesRow: Bool = {
            if case .row = facts.source { return true }
            if case .row = facts.target { return true }
            return target != nil
        }()
        // mv copies across folders of different namespaces (and the top).
        if involvesRow && request.from.namespace != request.to.namespace { throw RenameRefusal(.crossDevice) }
        for namespace in [request.from.namespace, request.to.namespace].compactMap({ $0 }) where MountLayout.isReadOnly(namespace) && involvesRow {
            throw RenameRefusal(.permissionDenied, "\(namespace.name) is read-only: memory is append-only")
        }
        if case .row(let ref) = facts.source, facts.sourceIsFolder { return try moveFolder(ref, request, facts) }
        if facts.targetIsFolder { throw RenameRefusal(.isDirectory) }
        if case .scratch(let folder, let name) = facts.source, target == nil {
            return try scratchToScratch(ScratchPlace(folder: folder, name: name), request, facts)
        }
        guard let namespace = request.to.namespace else { throw RenameRefusal(.notPermitted) }
        switch facts.source {
        case .row(let ref):
            if let target, !facts.isBackupStep { return try rowToRowName(ref, title: target.title, kind: target.kind, request, facts) }
            return try rowToScratch(ref, request, facts)
        case .scratch(let folder, let name):
            return try scratchToRow(ScratchPlace(folder: folder, name: name), namespace: namespace, title: target!.title,
                                    kind: target!.kind, request, facts)
        case .none:
            throw RenameRefusal(.noEntry)
        }
    }

    /// A folder of the notebook renamed or moved: one row changes.
    private static func moveFolder(_ ref: RowRef, _ request: RenameRequest, _ facts: RenameFacts) throws(RenameRefusal) -> RenamePlan {
        if request.flags.contains(.exchange) {
            throw RenameRefusal(.invalid, "exchanging a folder with another name is not supported; rename one, then the other")
        }
        guard let title = FileNames.folderTitle(request.newName) else {
            throw RenameRefusal(.notPermitted, "\(request.newName) is an editor's temporary name and cannot name a folder")
        }
        if facts.destinationWithinSource { throw RenameRefusal(.invalid) }
        var plan = RenamePlan()
        switch facts.target {
        case .none:
            plan.store = .moveFolder(ref, title: title, into: request.to.folderKey, replacing: nil)
        case .row(let targetRef) where facts.targetIsFolder:
            guard facts.targetFolderIsEmpty else { throw RenameRefusal(.notEmpty) }
            plan.store = .moveFolder(ref, title: title, into: request.to.folderKey, replacing: targetRef)
        case .row, .scratch:
            throw RenameRefusal(.notDirectory)
        }
        return plan
    }

    private static func sourceInode(_ facts: RenameFacts) throws(RenameRefusal) -> UInt64 {
        guard let inode = facts.sourceInode else { throw RenameRefusal(.noEntry) }
        return inode
    }

    private static func scratchToScratch(_ source: ScratchPlace, _ request: RenameRequest,
                                         _ facts: RenameFacts) throws(RenameRefusal) -> RenamePlan {
        if case .row = facts.target { throw RenameRefusal(.crossDevice) }
        let sourceInode = try sourceInode(facts)
        let target = ScratchPlace(folder: request.to, name: request.newName)
        var plan = RenamePlan(scratch: [.rename(from: source, to: target, flags: request.flags.rawValue & 3)])
        plan.tables.append(.repoint(inode: sourceInode, to: .scratch(target.folder, target.name)))
        if request.flags.contains(.exchange), let targetInode = facts.targetInode {
            plan.tables.append(.repoint(inode: targetInode, to: .scratch(source.folder, source.name)))
        }
        return plan
    }

    private static func rowToRowName(_ ref: RowRef, title: String, kind: NoteKind, _ request: RenameRequest,
                                     _ facts: RenameFacts) throws(RenameRefusal) -> RenamePlan {
        let namespace = ref.namespace
        let placement = namespace == .notebook ? Placement(kind: kind, folder: request.to.folderKey) : nil
        let sourceInode = try sourceInode(facts)
        let isNew = facts.newRows.contains(ref)
        var plan = RenamePlan()
        switch facts.target {
        case .none:
            if let removed = facts.removedAgain, removed.namespace == namespace {
                plan.store = .replace(target: removed, title: title, bytes: .row(ref), removing: isNew ? nil : ref,
                                      sourceName: request.name.text, placement: placement)
                plan.tables = [.settleReplacedSource(ref), .repoint(inode: sourceInode, to: .row(removed)),
                               .moveOpenFiles(inode: sourceInode, to: removed)]
            } else if namespace == .saga || namespace == .settings {
                // The key is the date or setting name: a new name is a new row.
                let newRef = RowRef(namespace: namespace, key: namespace == .saga ? SagaEntry.key(for: title) : Setting.key(for: title))
                plan.store = .replace(target: newRef, title: title, bytes: .row(ref), removing: isNew ? nil : ref,
                                      sourceName: request.name.text, placement: nil)
                plan.tables = [.settleReplacedSource(ref), .repoint(inode: sourceInode, to: .row(newRef)),
                               .moveOpenFiles(inode: sourceInode, to: newRef)]
            } else if isNew {
                plan.tables = [.renamePending(ref, to: request.newName, in: request.to, title: title, placement: placement)]
            } else {
                plan.store = .retitle(ref, title: title, placement: placement)
                plan.tables = [.retitleCopy(ref, title: title, placement: placement)]
            }
        case .row(let targetRef):
            guard let targetInode = facts.targetInode else { throw RenameRefusal(.noEntry) }
            if request.flags.contains(.exchange) {
                plan.store = .exchange(ref, targetRef)
                plan.tables = [.repoint(inode: sourceInode, to: .row(targetRef)), .repoint(inode: targetInode, to: .row(ref)),
                               .swapOpenFiles(sourceInode, targetInode, ref, targetRef)]
            } else {
                // The save by rename: the target keeps its key and history.
                plan.store = .replace(target: targetRef, title: nil, bytes: .row(ref), removing: isNew ? nil : ref,
                                      sourceName: request.name.text, placement: nil)
                plan.tables = [.settleReplacedSource(ref), .orphanOpenFiles(targetRef),
                               .repoint(inode: sourceInode, to: .row(targetRef)), .moveOpenFiles(inode: sourceInode, to: targetRef)]
            }
        case .scratch:
            throw RenameRefusal(.crossDevice)
        }
        return plan
    }

    private static func rowToScratch(_ ref: RowRef, _ request: RenameRequest, _ facts: RenameFacts) throws(RenameRefusal) -> RenamePlan {
        let sourceInode = try sourceInode(facts)
        let place = ScratchPlace(folder: request.to, name: request.newName)
        var plan = RenamePlan(scratch: [.write(place, .row(ref))])
        if request.flags.contains(.exchange), case .scratch = facts.target, let targetInode = facts.targetInode {
            plan.store = .replace(target: ref, title: nil, bytes: .scratch(place), removing: nil, sourceName: place.name.text, placement: nil)
            plan.tables = [.repoint(inode: sourceInode, to: .scratch(place.folder, place.name)), .repoint(inode: targetInode, to: .row(ref)),
                           .moveRowHandlesToScratch(ref, place, text: .row(ref)), .adoptScratchHandles(inode: targetInode, to: ref)]
            return plan
        }
        // An editor's backup step (vim, emacs: rename to name~, write a new
        // file under the old name). The row waits, hidden, for its name to
        // come back; if it does not, it is deleted (ChangeFeed.detachGrace).
        if facts.newRows.contains(ref) {
            plan.tables = [.forgetPending(ref), .markClean(ref)]
        } else {
            plan.tables = [.detach(ref, title: facts.sourceTitle, name: request.name, folder: request.from,
                                   backup: facts.isBackupStep ? place : nil)]
        }
        // Files still open go with the file to its new name: their writes
        // went to the row, which then came back as a row nobody named or
        // was deleted with them.
        plan.tables += [.repoint(inode: sourceInode, to: .scratch(place.folder, place.name)),
                        .moveRowHandlesToScratch(ref, place, text: .row(ref))]
        return plan
    }

    private static func scratchToRow(_ source: ScratchPlace, namespace: Namespace, title: String, kind: NoteKind,
                                     _ request: RenameRequest, _ facts: RenameFacts) throws(RenameRefusal) -> RenamePlan {
        let sourceInode = try sourceInode(facts)
        var plan = RenamePlan()
        switch facts.target {
        case .row(let targetRef):
            guard let targetInode = facts.targetInode else { throw RenameRefusal(.noEntry) }
            plan.store = .replace(target: targetRef, title: nil, bytes: .scratch(source), removing: nil, sourceName: source.name.text,
                                  placement: nil)
            if request.flags.contains(.exchange) {
                plan.scratch = [.write(source, .row(targetRef))]
                // Open files follow their inodes: the note's to the scratch
                // name (first, so the adopted ones are not moved back), the
                // scratch file's into the note.
                plan.tables = [.repoint(inode: sourceInode, to: .row(targetRef)),
                               .repoint(inode: targetInode, to: .scratch(source.folder, source.name)),
                               .moveRowHandlesToScratch(targetRef, source, text: .row(targetRef)),
                               .adoptScratchHandles(inode: sourceInode, to: targetRef)]
            } else {
                plan.scratch = [.remove(source)]
                plan.tables = [.orphanOpenFiles(targetRef), .repoint(inode: sourceInode, to: .row(targetRef)),
                               .adoptScratchHandles(inode: sourceInode, to: targetRef)]
            }
        case .none:
            let ref: RowRef
            if let reclaimed = facts.reclaimable {
                ref = reclaimed
                plan.reclaim = reclaimed
            } else if let removed = facts.removedAgain, removed.namespace == namespace {
                ref = removed
            } else {
                switch namespace {
                case .saga: ref = RowRef(namespace: namespace, key: SagaEntry.key(for: title))
                case .settings: ref = RowRef(namespace: namespace, key: Setting.key(for: title))
                default: ref = RowRef(namespace: namespace, key: facts.freshKey)
                }
            }
            let reclaim = plan.reclaim
            plan = newRow(from: source, ref: ref, title: title, kind: kind, inode: sourceInode, folder: request.to)
            plan.reclaim = reclaim
        case .scratch:
            throw RenameRefusal(.crossDevice)
        }
        return plan
    }

    /// The scratch file `source` becomes the row `ref` under `folder` (its
    /// own, unless a rename moves it), its inode and open files with it.
    static func newRow(from source: ScratchPlace, ref: RowRef, title: String, kind: NoteKind, inode: UInt64,
                       folder: Folder? = nil) -> RenamePlan {
        let folder = folder ?? source.folder
        var plan = RenamePlan()
        plan.store = .replace(target: ref, title: title, bytes: .scratch(source), removing: nil, sourceName: source.name.text,
                              placement: ref.namespace == .notebook ? Placement(kind: kind, folder: folder.folderKey) : nil)
        plan.scratch = [.remove(source)]
        plan.tables = [.repoint(inode: inode, to: .row(ref)), .adoptScratchHandles(inode: inode, to: ref)]
        return plan
    }
}
