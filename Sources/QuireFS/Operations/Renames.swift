import Foundation
import QuireCore
import QuireFuse
import QuireStore

/// unlink and rename. The kernel moves an inode along with its name, so
/// after each rename the inode that now sits at a name is re-pointed to the
/// object that name shows (see `InodeTable`).
extension QuireFileSystem {
    public func unlink(parent: FuseInode, name typed: String, request: FuseRequest) throws {
        let name = CanonicalName(typed)
        try locked { () throws(FuseError) in
            try unlink(name, in: parent.rawValue)
            forgetCanonicalForm(of: typed, name, in: parent.rawValue)
        }
    }

    private func unlink(_ name: CanonicalName, in parent: UInt64) throws(FuseError) {
        let folder = try folder(parent)
        guard case .namespace(let namespace) = folder else {
            guard scratch.status(.root, name) != nil else { throw .noEntry }
            try scratch.remove(.root, name)
            names.inodes.dropScratch(.root, name)
            return
        }
        switch try resolve(name, in: namespace) {
        case .none: throw .noEntry
        case .scratch(let folder, let name):
            try scratch.remove(folder, name)
            names.inodes.dropScratch(folder, name)
        case .row(let ref):
            if MountLayout.isReadOnly(namespace) {
                throw refuse(.permissionDenied, "\(namespace.name)/\(name) cannot be deleted: memory is append-only (record an event that buries it)")
            }
            let wasNew = openFiles.copy(ref)?.isNew == true
            orphanOpenFiles(of: ref)
            if wasNew {
                names.removePending(ref)
                return
            }
            do {
                recordWrite(ref, try store.deleteFromMount(namespace, ref.key))
            } catch {
                throw storeFailure(error, doing: "delete \(namespace.name)/\(name)")
            }
        }
    }

    public func rename(parent: FuseInode, name typed: String, newParent: FuseInode, newName typedNew: String,
                       flags: FuseRenameFlags, request: FuseRequest) throws {
        let name = CanonicalName(typed), newName = CanonicalName(typedNew)
        try locked { () throws(FuseError) in
            try rename(name, in: parent.rawValue, to: newName, in: newParent.rawValue, flags: flags)
            // The kernel moved its entry to the typed new name. The NFC
            // forms of both names it may cache are stale when they were
            // not the typed ones (the old one is gone, the new one showed
            // the replaced file), and the moved entry, when typed in
            // another form, must not stay cached (see `spelled`).
            forgetCanonicalForm(of: typed, name, in: parent.rawValue)
            forgetCanonicalForm(of: typedNew, newName, in: newParent.rawValue)
            if !typedNew.utf8.elementsEqual(newName.text.utf8) {
                kernelCache.invalidate(.spelling(parent: newParent.rawValue, name: Array(typedNew.utf8)))
            }
        }
    }

    private func rename(_ name: CanonicalName, in parent: UInt64, to newName: CanonicalName, in newParent: UInt64,
                        flags: FuseRenameFlags) throws(FuseError) {
        if flags.contains(.whiteout) || (flags.contains(.noReplace) && flags.contains(.exchange)) { throw .invalid }
        let from = try folder(parent), to = try folder(newParent)
        // The stored (NFC) form must fit: it can be longer than the typed one.
        guard newName.text.utf8.count <= FileNames.maximumNameBytes else {
            throw refuse(.nameTooLong, "rename to \(newName.text.prefix(40))… refused: a name is at most 255 bytes in NFC (\(newName.text.utf8.count) given)")
        }
        let source = try resolveAnywhere(name, in: from)
        let target = try resolveAnywhere(newName, in: to)
        if source == .none { throw .noEntry }
        if flags.contains(.noReplace) && target != .none { throw .exists }
        if flags.contains(.exchange) && target == .none { throw .noEntry }
        if source == target { return }
        let exchange = flags.contains(.exchange)

        var targetTitle: String? = nil
        if case .namespace(let namespace) = to, case .row(let title) = FileNames.meaning(of: newName, in: namespace) {
            targetTitle = title
        }
        let involvesRow: Bool = {
            if case .row = source { return true }
            if case .row = target { return true }
            return targetTitle != nil
        }()
        if involvesRow && from != to { throw .crossDevice }   // mv copies across folders
        for case .namespace(let namespace) in [from, to] where MountLayout.isReadOnly(namespace) && involvesRow {
            throw refuse(.permissionDenied, "\(namespace.name) is read-only: memory is append-only")
        }
        if case .scratch(let sourceFolder, let sourceName) = source, targetTitle == nil {
            return try renameScratch(sourceFolder, sourceName, to: to, newName, target: target, flags: flags)
        }
        guard case .namespace(let namespace) = to else { throw .notPermitted }
        switch source {
        case .row(let ref):
            if let title = targetTitle {
                try renameRow(ref, from: name, to: newName, title: title, target: target, exchange: exchange)
            } else {
                try moveRowToScratch(ref, from: name, to: newName, target: target, exchange: exchange)
            }
        case .scratch(let sourceFolder, let sourceName):
            try moveScratchToRow(sourceFolder, sourceName, namespace: namespace, to: newName, title: targetTitle!,
                                 target: target, exchange: exchange)
        case .none:
            throw .noEntry
        }
    }

    private func resolveAnywhere(_ name: CanonicalName, in folder: Folder) throws(FuseError) -> ResolvedName {
        switch folder {
        case .root: return scratch.status(.root, name) != nil ? .scratch(.root, name) : .none
        case .namespace(let namespace): return try resolve(name, in: namespace)
        }
    }

    // MARK: Scratch to scratch

    private func renameScratch(_ folder: Folder, _ name: CanonicalName, to newFolder: Folder, _ newName: CanonicalName,
                               target: ResolvedName, flags: FuseRenameFlags) throws(FuseError) {
        if case .row = target { throw .crossDevice }
        let sourceInode = names.inodes.inode(forScratch: folder, name)
        let targetInode = target == .none ? nil : names.inodes.inode(forScratch: newFolder, newName)
        try scratch.rename((folder, name), (newFolder, newName), flags: flags.rawValue & 3)
        names.inodes.repoint(sourceInode, to: .scratch(newFolder, newName))
        if flags.contains(.exchange), let targetInode { names.inodes.repoint(targetInode, to: .scratch(folder, name)) }
    }

    // MARK: Row to a row name

    private func renameRow(_ ref: RowRef, from name: CanonicalName, to newName: CanonicalName, title: String,
                           target: ResolvedName, exchange: Bool) throws(FuseError) {
        let namespace = ref.namespace
        let sourceInode = names.inodes.inode(for: ref)
        let bytes = try currentBytes(ref)
        switch target {
        case .none:
            if namespace == .saga || namespace == .settings {
                // The key is the date or setting name: a new name is a new row.
                let newRef = RowRef(namespace: namespace, key: namespace == .saga ? SagaEntry.key(for: title) : Setting.key(for: title))
                try replace(newRef, titled: title, with: bytes, removing: ref, sourceName: name.text)
                names.inodes.repoint(sourceInode, to: .row(newRef))
                moveOpenFiles(of: sourceInode, to: newRef)
            } else if openFiles.copy(ref)?.isNew == true {
                names.addPending(newName, ref)
                openFiles.modifyCopy(ref) { $0.title = title }
            } else {
                try retitle(ref, to: title)
            }
        case .row(let targetRef):
            let targetInode = names.inodes.inode(for: targetRef)
            if exchange {
                let targetBytes = try currentBytes(targetRef)
                try swapContents(ref, bytes: targetBytes, targetRef, bytes: bytes)
                names.inodes.repoint(sourceInode, to: .row(targetRef))
                names.inodes.repoint(targetInode, to: .row(ref))
                swapOpenFiles(sourceInode, targetInode, ref, targetRef)
            } else {
                // The save by rename: the target keeps its key and history.
                try replace(targetRef, titled: nil, with: bytes, removing: ref, sourceName: name.text)
                orphanOpenFiles(of: targetRef)
                names.inodes.repoint(sourceInode, to: .row(targetRef))
                moveOpenFiles(of: sourceInode, to: targetRef)
            }
        case .scratch:
            throw .crossDevice
        }
    }

    /// `bytes` become a new version of `targetRef` (created if needed), and
    /// `source` goes away: removed outright if it never left this device,
    /// else as a tombstone. One transaction.
    private func replace(_ targetRef: RowRef, titled newTitle: String?, with bytes: [UInt8],
                         removing source: RowRef?, sourceName: String) throws(FuseError) {
        let namespace = targetRef.namespace
        let previous = try storedContent(targetRef)
        let title = newTitle ?? openFiles.copy(targetRef)?.title ?? previous?.displayName ?? ""
        let content = try parseForRename(namespace, title: title, bytes: bytes, previous: previous, name: sourceName)
        let sourceIsNew = source.map { openFiles.copy($0)?.isNew == true } ?? true
        let edit: ReplicaStore.MountEdit
        do {
            // The editor wrote the temp file from what this device last
            // showed of the target: deletions are computed against that.
            edit = try store.replaceFromMount(target: targetRef.key, with: content, removing: sourceIsNew ? nil : source?.key,
                                              shown: lastShown[targetRef])
        } catch {
            throw storeFailure(error, doing: "save \(namespace.name)/\(sourceName) over its target")
        }
        recordWrite(targetRef, edit)
        lastShown[targetRef] = edit.row.content.flatMap(RowFormat.render) ?? bytes
        if let source {
            if sourceIsNew { names.removePending(source) }
            openFiles.modifyCopy(source) { copy in
                copy.isDirty = false
                copy.isNew = false
            }
            kernelCache.invalidate(names.unlist(source))
        }
    }

    private func retitle(_ ref: RowRef, to title: String) throws(FuseError) {
        guard let stored = try storedContent(ref) else { throw .noEntry }
        var content = stored
        switch stored {
        case .note(var note): note.title = title; content = .note(note)
        case .plan(var plan): plan.title = title; content = .plan(plan)
        case .contact(var contact): contact.name = title; content = .contact(contact)
        default: throw .notPermitted
        }
        do { recordWrite(ref, try store.putFromMount(content, key: ref.key)) } catch {
            throw storeFailure(error, doing: "rename \(ref.namespace.name)/\(displayName(ref))")
        }
        openFiles.modifyCopy(ref) { $0.title = title }
        if case .contact = content {
            // The card's FN shows the new name: its text changed.
            if let copy = openFiles.copy(ref), !copy.isDirty, let bytes = RowFormat.render(content) {
                openFiles.modifyCopy(ref) { $0.content = bytes }
            }
            kernelCache.invalidateInodes(names.inodes.inodesOfRow[ref] ?? [])
        }
    }

    /// RENAME_EXCHANGE of two rows: each name keeps its row (and key) and
    /// shows the other's text. Both edits in one transaction.
    private func swapContents(_ a: RowRef, bytes aBytes: [UInt8], _ b: RowRef, bytes bBytes: [UInt8]) throws(FuseError) {
        for ref in [a, b] where openFiles.copy(ref)?.isNew == true { try commit(ref, shown: nil) }
        let aPrevious = try storedContent(a), bPrevious = try storedContent(b)
        let aContent = try parseForRename(a.namespace, title: aPrevious?.displayName ?? "", bytes: aBytes, previous: aPrevious, name: displayName(b))
        let bContent = try parseForRename(b.namespace, title: bPrevious?.displayName ?? "", bytes: bBytes, previous: bPrevious, name: displayName(a))
        do {
            let edits = try store.putAllFromMount([(aContent, a.key), (bContent, b.key)])
            recordWrite(a, edits[0])
            recordWrite(b, edits[1])
        } catch {
            throw storeFailure(error, doing: "exchange \(displayName(a)) and \(displayName(b))")
        }
    }

    // MARK: Rows and scratch files

    private func moveScratchToRow(_ folder: Folder, _ name: CanonicalName, namespace: Namespace, to newName: CanonicalName, title: String,
                                  target: ResolvedName, exchange: Bool) throws(FuseError) {
        let sourceInode = names.inodes.inode(forScratch: folder, name)
        let bytes = try scratch.contents(folder, name)
        switch target {
        case .row(let targetRef):
            let targetInode = names.inodes.inode(for: targetRef)
            if exchange {
                let targetBytes = try currentBytes(targetRef)
                try replace(targetRef, titled: nil, with: bytes, removing: nil, sourceName: name.text)
                try scratch.replaceContents(folder, name, with: targetBytes)
                names.inodes.repoint(sourceInode, to: .row(targetRef))
                names.inodes.repoint(targetInode, to: .scratch(folder, name))
                // Open files follow their inodes: the note's to the scratch
                // name, the scratch file's into the note.
                moveRowHandles(of: targetRef, toScratch: folder, name, bytes: targetBytes)
                adoptScratchHandles(of: sourceInode, to: targetRef)
            } else {
                try replace(targetRef, titled: nil, with: bytes, removing: nil, sourceName: name.text)
                try? scratch.remove(folder, name)
                orphanOpenFiles(of: targetRef)
                names.inodes.repoint(sourceInode, to: .row(targetRef))
                adoptScratchHandles(of: sourceInode, to: targetRef)
            }
        case .none:
            let ref = reclaimOrNewRef(namespace, title: title)
            try replace(ref, titled: title, with: bytes, removing: nil, sourceName: name.text)
            try? scratch.remove(folder, name)
            names.inodes.repoint(sourceInode, to: .row(ref))
            adoptScratchHandles(of: sourceInode, to: ref)
        case .scratch:
            throw .crossDevice
        }
    }

    /// Files still open on a temp file renamed over a row name follow it:
    /// what they write later (Python flushes its buffer at close, after an
    /// os.replace inside its `with` block) went to the removed temp file.
    /// They were opened without flush, so their text is committed when the
    /// last of them is released.
    private func adoptScratchHandles(of inode: UInt64, to ref: RowRef) {
        let open = openFiles.handles { file in
            if case .scratch = file.target { return file.inode == inode }
            return false
        }
        guard !open.isEmpty, let copy = try? workingCopy(ref) else { return }
        openFiles.keep(copy, for: ref)
        for handle in open {
            if case .scratch(let descriptor)? = openFiles[handle]?.target { close(descriptor) }
            openFiles.retarget(handle, to: .row(ref))
            openFiles.setShown(handle, copy.content)
        }
    }

    private func moveRowToScratch(_ ref: RowRef, from name: CanonicalName, to newName: CanonicalName,
                                  target: ResolvedName, exchange: Bool) throws(FuseError) {
        let namespace = ref.namespace
        let folder = Folder.namespace(namespace)
        let sourceInode = names.inodes.inode(for: ref)
        let bytes = try currentBytes(ref)
        if exchange, case .scratch = target {
            let targetInode = names.inodes.inode(forScratch: folder, newName)
            let scratchBytes = try scratch.contents(folder, newName)
            try replace(ref, titled: nil, with: scratchBytes, removing: nil, sourceName: newName.text)
            try scratch.replaceContents(folder, newName, with: bytes)
            names.inodes.repoint(sourceInode, to: .scratch(folder, newName))
            names.inodes.repoint(targetInode, to: .row(ref))
            moveRowHandles(of: ref, toScratch: folder, newName, bytes: bytes)
            adoptScratchHandles(of: targetInode, to: ref)
            return
        }
        // An editor's backup step (vim, emacs: rename to name~, write a new
        // file under the old name). The row waits, hidden, for its name to
        // come back; if it does not, it is deleted (ChangeFeed.detachGrace).
        try scratch.replaceContents(folder, newName, with: bytes)
        if openFiles.copy(ref)?.isNew == true {
            names.removePending(ref)
            openFiles.modifyCopy(ref) { $0.isDirty = false }
        } else {
            let listed = try listing(namespace).rows[ref.key]?.title
            let title = openFiles.copy(ref)?.title ?? listed ?? ""
            names.detach(ref, DetachedRow(title: title, name: name, since: Date()))
            wakeFeed?()
        }
        names.inodes.repoint(sourceInode, to: .scratch(folder, newName))
        // Files still open go with the file to its new name: their writes
        // went to the row, which then came back as a row nobody named or
        // was deleted with them. Their unsaved text is in `bytes` already.
        moveRowHandles(of: ref, toScratch: folder, newName, bytes: bytes)
    }

    /// Files open on `ref` follow its inode to the scratch file
    /// `folder/name`, which holds their text (`bytes`, unsaved edits
    /// included); the row's working copy goes with them.
    private func moveRowHandles(of ref: RowRef, toScratch folder: Folder, _ name: CanonicalName, bytes: [UInt8]) {
        for handle in openFiles.handles(on: ref) {
            let flags = openFiles[handle]!.flags.rawValue & ~(O_CREAT | O_EXCL | O_TRUNC)
            if let descriptor = try? scratch.open(folder, name, flags: flags) {
                openFiles.retarget(handle, to: .scratch(descriptor))
            } else {
                openFiles.retarget(handle, to: .orphan(bytes, modifiedAt: .now))
            }
        }
        openFiles.dropCopyIfUnheld(ref)
    }

    private func reclaimOrNewRef(_ namespace: Namespace, title: String) -> RowRef {
        if let ref = names.detachedRow(titled: title, in: namespace) {
            names.reattach(ref)
            return ref
        }
        switch namespace {
        case .saga: return RowRef(namespace: namespace, key: SagaEntry.key(for: title))
        case .settings: return RowRef(namespace: namespace, key: Setting.key(for: title))
        default: return RowRef(namespace: namespace, key: RowKey(bytes: (0..<16).map { _ in UInt8.random(in: 0...255) })!)
        }
    }

    // MARK: Helpers

    /// The text a row's file shows now (its open working copy, else stored).
    func currentBytes(_ ref: RowRef) throws(FuseError) -> [UInt8] {
        try workingCopy(ref).content
    }

    private func storedContent(_ ref: RowRef) throws(FuseError) -> RowContent? {
        do { return try store.row(ref.namespace, ref.key)?.content } catch {
            throw storeFailure(error, doing: "read \(ref.namespace.name)/\(ref.key.hex)")
        }
    }

    private func parseForRename(_ namespace: Namespace, title: String, bytes: [UInt8], previous: RowContent?,
                                name: String) throws(FuseError) -> RowContent {
        do {
            return try RowFormat.parse(namespace, title: title, bytes: bytes, previous: previous)
        } catch {
            throw refuse(error.fuseError, "\(namespace.name)/\(name) \(error.message); the rename was refused and the file left as it was")
        }
    }

    /// Files still open on a row that was replaced or deleted keep reading
    /// what they had; their writes go nowhere, as on any filesystem.
    func orphanOpenFiles(of ref: RowRef) {
        guard let copy = openFiles.orphan(ref) else { return }
        if copy.isNew { names.removePending(ref) }
    }

    /// The kernel moved `inode` (and the files open on it) to a name that
    /// now shows `ref`.
    private func moveOpenFiles(of inode: UInt64, to ref: RowRef) {
        for handle in openFiles.handles(where: { $0.inode == inode }) {
            guard let old = openFiles[handle]?.target.row, old != ref else { continue }
            // A handle whose new row cannot be loaded stays where it was.
            guard let copy = try? workingCopy(ref) else { continue }
            openFiles.keep(copy, for: ref)
            openFiles.retarget(handle, to: .row(ref))
            openFiles.dropCopyIfUnheld(old)
        }
    }

    /// After RENAME_EXCHANGE each file's text (and its open handles) went
    /// with its inode to the other row, and both texts are committed. The
    /// working copies go along too: a copy left behind kept a handle-less,
    /// dirty text that unmount committed over the exchange, and a handle
    /// moved to a row with no copy failed its writes with EBADF.
    private func swapOpenFiles(_ aInode: UInt64, _ bInode: UInt64, _ a: RowRef, _ b: RowRef) {
        let toB = openFiles.handles { $0.inode == aInode && $0.target.row == a }
        let toA = openFiles.handles { $0.inode == bInode && $0.target.row == b }
        let copyOfA = openFiles.copy(a), copyOfB = openFiles.copy(b)
        var stored: [RowRef: [UInt8]] = [:]
        for ref in [a, b] {
            stored[ref] = try? renderedContent(ref)
            if let bytes = stored[ref] { lastShown[ref] = bytes }
        }
        for (ref, moved, movers) in [(b, copyOfA, toB), (a, copyOfB, toA)] {
            let stays = openFiles.handles(on: ref).filter { !toA.contains($0) && !toB.contains($0) }
            // Each working copy lives while a handle points at it.
            guard !(movers + stays).isEmpty, let bytes = stored[ref] else { continue }
            // The exchange committed the moved text to this row: the copy
            // (the one that moved with the file, if any) is that text.
            var copy = moved ?? WorkingCopy(title: "", content: [])
            copy.content = bytes
            copy.isDirty = false
            copy.isNew = false
            copy.title = names.listing(ref.namespace)?.rows[ref.key]?.title ?? copy.title
            copy.seq = names.listing(ref.namespace)?.rows[ref.key]?.seq ?? copy.seq
            openFiles.keep(copy, for: ref)
        }
        for handle in toB where openFiles.copy(b) != nil { openFiles.retarget(handle, to: .row(b)) }
        for handle in toA where openFiles.copy(a) != nil { openFiles.retarget(handle, to: .row(a)) }
        for ref in [a, b] {
            // What each handle shows is committed now: the baseline of its
            // next save (a stale one made a prose merge repeat paragraphs).
            for handle in openFiles.handles(on: ref) { openFiles.setShown(handle, stored[ref] ?? []) }
            openFiles.dropCopyIfUnheld(ref)
        }
    }
}
