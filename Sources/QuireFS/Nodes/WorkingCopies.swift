import Foundation
import QuireCore
import QuireFuse
import QuireStore

/// The text of one row while files on it are open: shared by every open
/// handle (so all of them see each other's writes, as on any filesystem)
/// and committed as one new version at flush.
struct WorkingCopy {
    var title: String
    var content: [UInt8]
    var isDirty = false
    /// Created through the mount and never committed: no row exists yet.
    var isNew = false
    /// Unlinked while open: later writes go nowhere, as on any filesystem.
    var isUnlinked = false
    var openCount = 0
    var modifiedAt: FuseTimestamp = .now
    /// The change number of the stored version `content` came from.
    var seq: Int64 = 0

    /// Applies `change` to this copy where it stands (`working[ref]!.modify`),
    /// so its text is not copied.
    mutating func modify(_ change: (inout WorkingCopy) -> Void) { change(&self) }
}

/// One open file.
struct OpenFile {
    enum Target {
        case row(RowRef)
        case scratch(Int32)
        case control([UInt8])
        /// A row file removed (rm, or a save by rename over it) while this
        /// handle was open: it keeps its text and takes writes, which go
        /// nowhere, as on any filesystem (they used to fail with EBADF, and
        /// fstat and reads with ENOENT).
        case orphan([UInt8], modifiedAt: FuseTimestamp)
    }

    var target: Target
    var inode: UInt64
    var flags: FuseOpenFlags
    /// The exact bytes this handle was shown when it opened (or last
    /// committed). A prose merge (issue 6) computes deliberate deletions
    /// against this, never against the live row, so a sync import that lands
    /// while the file is open is not mistaken for a deletion.
    var shown: [UInt8]
}

extension QuireFileSystem {
    /// The working copy of a row, loading the stored text if none is open.
    /// Throws EIO for an offloaded body that cannot be recalled.
    /// A loaded copy is not kept: the caller stores it when a handle holds
    /// it. A copy kept with no handle is never released, so it went stale
    /// (a saga date or setting name written again after a rename got the
    /// new text over the old row's tail).
    func workingCopy(_ ref: RowRef) throws(FuseError) -> WorkingCopy {
        if let copy = working[ref] { return copy }
        let row: Row?
        do { row = try store.row(ref.namespace, ref.key) } catch { throw storeFailure(error, doing: "read \(ref.namespace.name)/\(ref.key.hex)") }
        guard let row, let content = row.content, detached[ref] == nil else { throw .noEntry }
        var bytes = RowFormat.render(content)
        if bytes == nil, case .note(let note) = content {
            bytes = try recall(ref, note: note)
            // The lock was let go during the recall: a concurrent open may
            // have made the copy meanwhile. Replacing it lost its handle
            // count, and its other files read an empty note once one closed.
            if let copy = working[ref] { return copy }
            // The recall stored the body: show the row as it reads now. With
            // a concurrent version beside the offloaded one, that is their
            // union; the recalled bytes alone would lose the other's words
            // at the next save.
            if let now = try? store.row(ref.namespace, ref.key)?.content, let rendered = RowFormat.render(now) { bytes = rendered }
        }
        let seq = (try? listing(ref.namespace).rows[ref.key]?.seq) ?? nil
        return WorkingCopy(title: content.displayName, content: bytes ?? [], seq: seq ?? 0)
    }

    /// An offloaded body, through the recall hook (issue 5).
    private func recall(_ ref: RowRef, note: Note) throws(FuseError) -> [UInt8] {
        guard let recall = configuration.recall else {
            throw refuse(.io, "notebook/\(displayName(ref)): the body is offloaded and this mount cannot recall it; run 'quire recall'")
        }
        // The recall may wait for the network: let other requests run.
        lock.unlock()
        defer { lock.lock() }
        do {
            return try recall(ref.key, note.contentHash, configuration.recallTimeout)
        } catch {
            log.problem("notebook/\(ref.key.hex): recall failed: \(error)")
            throw .io
        }
    }

    /// Commits a dirty working copy as one new version of its row.
    /// `shown` is what the committing handle was shown (see `OpenFile.shown`).
    func commit(_ ref: RowRef, shown: [UInt8]?) throws(FuseError) {
        guard var copy = working[ref], copy.isDirty else { return }
        if copy.isUnlinked {
            copy.isDirty = false
            working[ref] = copy
            return
        }
        let name = "\(ref.namespace.name)/\(displayName(ref))"
        var previous: RowContent? = nil
        if !copy.isNew {
            do { previous = try store.row(ref.namespace, ref.key)?.content } catch { throw storeFailure(error, doing: "read \(name)") }
        }
        var content: RowContent
        do {
            content = try RowFormat.parse(ref.namespace, title: copy.title, bytes: copy.content, previous: previous)
        } catch {
            reject(ref, copy: copy, previous: previous, error: error, name: name)
            throw error.fuseError
        }
        // The file's size was checked as it was written; this is the same
        // limit on what the text became (a plan's title comes from its name).
        let bodyBytes = RowLimits.bodyBytes(of: content)
        guard bodyBytes <= RowLimits.maxBodyBytes else {
            let error = FormatError(.tooLarge, "holds \(RowLimits.describe(bodyBytes)), over the \(RowLimits.describe(RowLimits.maxBodyBytes)) "
                                    + "one version of a row may hold and still sync (EFBIG)")
            reject(ref, copy: copy, previous: previous, error: error, name: name)
            throw error.fuseError
        }
        // A card renamed while open: its FN is still the one the file showed
        // (the user did not change it), so the rename's name stands; it
        // used to come back as the old name at close.
        if case .contact(var contact) = content, contact.name != copy.title, let baseline = shown ?? lastShown[ref],
           case .contact(let before)? = try? RowFormat.parse(.contacts, title: copy.title, bytes: baseline, previous: nil),
           before.name == contact.name {
            contact.name = copy.title
            content = .contact(contact)
        }
        let edit: ReplicaStore.MountEdit
        do { edit = try store.putFromMount(content, key: ref.key, shown: shown ?? lastShown[ref]) } catch { throw storeFailure(error, doing: "save \(name)") }
        lastShown[ref] = edit.row.content.flatMap(RowFormat.render) ?? copy.content
        copy.isDirty = false
        copy.isNew = false
        if let seq = edit.seq { copy.seq = seq }
        pending[ref.namespace] = pending[ref.namespace]?.filter { $0.value != ref }
        // What the row now renders to is the file's content (a vCard comes
        // back in canonical form); if that differs from what the kernel
        // cached from the writes, drop its cache.
        if let canonical = edit.row.content.flatMap(RowFormat.render), canonical != copy.content {
            copy.content = canonical
            for inode in inodes.inodesOfRow[ref] ?? [] { invalidations.append(.inode(inode)) }
        }
        working[ref] = copy
        recordWrite(ref, edit)
    }

    /// Brings the directory view up to date after a write of ours.
    func recordWrite(_ ref: RowRef, _ edit: ReplicaStore.MountEdit) {
        renderedSizes.removeValue(forKey: ref)
        guard let seq = edit.seq else { return }
        selfWrites[ref] = seq
        applyToListing(RowSummary(row: edit.row, seq: seq))
    }

    func applyToListing(_ summary: RowSummary) {
        // Mutated in place: a copy would duplicate 10,000-entry tables per write.
        guard let changes = listings[summary.namespace]?.apply(summary) else { return }
        let parent = InodeTable.folderInode(summary.namespace)
        for change in changes {
            if let old = change.oldName { invalidations.append(.entry(parent: parent, name: old)) }
            if let new = change.newName { invalidations.append(.entry(parent: parent, name: new)) }
        }
    }

    /// Text that cannot become a row: refused at flush (close() fails), and
    /// kept beside the file as `<name>.rejected` so not a word is lost.
    private func reject(_ ref: RowRef, copy: WorkingCopy, previous: RowContent?, error: FormatError, name: String) {
        let fileName = displayName(ref)
        let keptName = CanonicalName(fileName + ".rejected")
        var kept = "and your text is kept in \(ref.namespace.name)/\(keptName) (on this device only)"
        do {
            try scratch.replaceContents(.namespace(ref.namespace), keptName, with: copy.content)
        } catch {
            kept = "and your text could not be kept (\(error)): save it again elsewhere"
        }
        log.problem("\(name) \(error.message); not saved, \(kept)")
        var reverted = copy
        reverted.isDirty = false
        reverted.content = previous.flatMap(RowFormat.render) ?? []
        working[ref] = reverted
        invalidations.append(.entry(parent: InodeTable.folderInode(ref.namespace), name: keptName))
        for inode in inodes.inodesOfRow[ref] ?? [] { invalidations.append(.inode(inode)) }
    }

    /// The last handle closed with text that could not be committed (disk
    /// full, say): keep it in the scratch area and say so.
    func keepUnsaved(_ ref: RowRef, because reason: String) {
        guard let copy = working[ref], copy.isDirty else { return }
        let keptName = CanonicalName(displayName(ref) + ".unsaved")
        let kept = (try? scratch.replaceContents(.namespace(ref.namespace), keptName, with: copy.content)) != nil
        log.problem("\(ref.namespace.name)/\(displayName(ref)) could not be saved (\(reason)); "
                    + (kept ? "the text is kept in \(ref.namespace.name)/\(keptName)" : "and could not be kept either"))
    }

    /// A handle went away: drop the working copy when nobody needs it.
    func releaseWorkingCopy(_ ref: RowRef) {
        guard var copy = working[ref] else { return }
        copy.openCount -= 1
        if copy.openCount > 0 {
            working[ref] = copy
            return
        }
        if copy.isDirty {
            do { try commit(ref, shown: nil) } catch { keepUnsaved(ref, because: "\(error)") }
        }
        working.removeValue(forKey: ref)
        if copy.isNew {
            // Created, never committed (its text was refused): it never existed.
            pending[ref.namespace] = pending[ref.namespace]?.filter { $0.value != ref }
        }
    }

    /// Deletes a detached row whose name did not come back.
    func finishDetach(_ ref: RowRef) {
        guard detached.removeValue(forKey: ref) != nil else { return }
        do {
            // Always a tombstone: a sibling may have pulled the row already,
            // and only a tombstone keeps it from coming back from there.
            recordWrite(ref, try store.deleteFromMount(ref.namespace, ref.key))
        } catch {
            log.problem("could not delete \(ref.namespace.name)/\(ref.key.hex) after it was renamed away: \(error)")
        }
    }
}
