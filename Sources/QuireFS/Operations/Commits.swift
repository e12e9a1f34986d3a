import Foundation
import QuireCore
import QuireFuse
import QuireStore

/// Working copies between the open-file table and the store: loading a
/// row's text, committing it, and what happens when the last handle goes.
extension QuireFileSystem {
    /// The working copy of a row, loading the stored text if none is open.
    /// Throws EIO for an offloaded body that cannot be recalled.
    /// A loaded copy is not kept: the caller stores it when a handle holds
    /// it. A copy kept with no handle is never released, so it went stale
    /// (a saga date or setting name written again after a rename got the
    /// new text over the old row's tail).
    func workingCopy(_ ref: RowRef) throws(FuseError) -> WorkingCopy {
        if let copy = openFiles.copy(ref) { return copy }
        // A warm open of an unchanged row: one indexed read, no render.
        let stored: Int64?
        do { stored = try store.changeNumber(ref.namespace, ref.key) } catch { throw storeFailure(error, doing: "read \(ref.namespace.name)/\(ref.key.hex)") }
        if let stored, !names.isDetached(ref), var copy = cleanCopies.copy(ref, seq: stored) {
            copy.seq = (try? listing(ref.namespace).rows[ref.key]?.seq) ?? 0   // what the kernel cache tracks
            copy.storedSeq = stored
            return copy
        }
        // The text and its change number from one read: the copy's number
        // tells the kernel cache which pages and size are this text's.
        let read: (row: Row, changeNumber: Int64)?
        do { read = try store.rowWithChangeNumber(ref.namespace, ref.key) } catch {
            throw storeFailure(error, doing: "read \(ref.namespace.name)/\(ref.key.hex)")
        }
        guard let read, var content = read.row.content, !names.isDetached(ref) else { throw .noEntry }
        var storedSeq = read.changeNumber
        var bytes = RowFormat.render(content)
        if bytes == nil, case .note(let note) = content {
            bytes = try recall(ref, note: note)
            // The lock was let go during the recall: a concurrent open may
            // have made the copy meanwhile. Replacing it lost its handle
            // count, and its other files read an empty note once one closed.
            if let copy = openFiles.copy(ref) { return copy }
            // The recall stored the body: show the row as it reads now. With
            // a concurrent version beside the offloaded one, that is their
            // union; the recalled bytes alone would lose the other's words
            // at the next save.
            if let now = try? store.rowWithChangeNumber(ref.namespace, ref.key), let nowContent = now.row.content,
               let rendered = RowFormat.render(nowContent) {
                bytes = rendered
                content = nowContent
                storedSeq = now.changeNumber
            }
        }
        let seq = (try? listing(ref.namespace).rows[ref.key]?.seq) ?? nil
        var copy = WorkingCopy(title: content.displayName, content: bytes ?? [], seq: seq ?? 0, storedSeq: storedSeq)
        copy.place(content)
        cleanCopies.keep(copy, seq: storedSeq, for: ref)
        return copy
    }

    /// An offloaded body, through the recall hook (issue 5).
    private func recall(_ ref: RowRef, note: Note) throws(FuseError) -> [UInt8] {
        guard let recall = configuration.recall else {
            throw refuse(.io, "notebook/\(displayName(ref)): the body is offloaded and this mount cannot recall it; run 'quire recall'")
        }
        let name = rowPath(ref)
        // The recall may wait for the network: let other requests run.
        lock.unlock()
        defer { lock.lock() }
        do {
            return try recall(ref.key, note.contentHash, configuration.recallTimeout)
        } catch {
            // The open fails with EIO; the line in .quire/status and the log says why.
            log.problem("\(name): its body is offloaded and could not be brought back (EIO): \(error)")
            throw .io
        }
    }

    /// Commits a dirty working copy as one new version of its row.
    /// `shown` is what the committing handle was shown (see `OpenFile.shown`),
    /// `process` the one that opened it.
    func commit(_ ref: RowRef, shown: [UInt8]?, process: Int32? = nil) throws(FuseError) {
        guard var copy = openFiles.copy(ref), copy.isDirty else { return }
        let name = rowPath(ref)
        var previous: RowContent? = nil
        if !copy.isNew {
            do { previous = try store.row(ref.namespace, ref.key)?.content } catch { throw storeFailure(error, doing: "read \(name)") }
        }
        switch copy.refusedWrite {
        case .tooLarge?:
            let error = FormatError(.tooLarge, "was written past the \(RowLimits.describe(RowLimits.maxBodyBytes)) a file may hold (EFBIG), "
                                    + "so its text is cut; the stored text is left as it was")
            reject(ref, copy: copy, previous: previous, error: error, name: name)
            throw error.fuseError
        case .noRoom?:
            // Nothing kept beside it: there is no room for a copy either.
            revertToStored(ref, copy: copy, previous: previous)
            throw refuse(.noSpace, "\(name) was not saved: a write to it was refused for lack of room on the disk, "
                         + "so its text is cut; the stored text is left as it was", kind: "disk full")
        case nil: break
        }
        let baseline = shown ?? lastShown.baseline(ref, process: process) ?? (copy.isNew ? nil : unkeptBaseline(ref, version: copy.storedSeq))
        var content: RowContent
        do {
            content = try RowFormat.parse(ref.namespace, title: copy.title, bytes: rebasedCard(copy.content, shown: baseline, previous: previous),
                                          previous: previous, key: ref.key)
        } catch {
            reject(ref, copy: copy, previous: previous, error: error, name: name)
            throw error.fuseError
        }
        if case .note(var note) = content {
            // A stored row's place is the store's (a move elsewhere while
            // the file was open stands); a new row's is where it was made.
            if case .note(let stored)? = previous {
                note.kind = stored.kind
                note.folder = stored.folder
            } else {
                note.kind = copy.kind
                note.folder = copy.folder
            }
            note.modifiedAt = copy.setModificationTime
            content = .note(note)
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
        let edit: ReplicaStore.MountEdit
        // No text kept: the stored text is the baseline while it is still the version this copy came from.
        let shownVersion = baseline == nil && !copy.isNew ? copy.storedSeq : nil
        // An attachment's writes landed on the text the copy held when clean:
        // a version stored since then (a sibling's) is kept beside it.
        let basedOn = copy.isNew ? nil : copy.cleanText
        do { edit = try store.putFromMount(content, key: ref.key, shown: baseline, shownVersion: shownVersion, basedOn: basedOn) } catch {
            throw storeFailure(error, doing: "save \(name)")
        }
        // The writer was shown what it wrote, not what the store merged in
        // (an editor keeps its own text and saves it again): a sibling's
        // paragraph merged into this version is no deletion of its next save.
        let rendered = edit.row.content.flatMap(RowFormat.render)
        lastShown.record(ref, copy.content, process: process, version: rendered == copy.content ? edit.seq : nil,
                         writing: copy.isWrittenWhole ? .whole(over: baseline ?? previous.flatMap(RowFormat.render)) : .onto)
        copy.isDirty = false
        copy.isNew = false
        copy.setModificationTime = nil
        if let seq = edit.seq {
            copy.seq = seq
            copy.storedSeq = seq
        }
        let createdAs = names.pendingName(of: ref)
        names.removePending(ref)
        // What the row now renders to is the file's content (a vCard comes
        // back in canonical form); if that differs from what the kernel
        // cached from the writes, drop its cache.
        if let canonical = rendered, canonical != copy.content {
            copy.content = canonical
            kernelCache.invalidateInodes(names.inodes.inodesOfRow[ref] ?? [])
        }
        openFiles.keep(copy, for: ref)
        // Every handle on the row shares this copy, so every one of them
        // was shown what was just committed: the baseline of its next save.
        // (Only the flushing handle's was updated, so a second file open
        // on the note repeated the first one's paragraphs at its close.)
        for handle in openFiles.handles(on: ref) { openFiles.setShown(handle, copy.content) }
        recordWrite(ref, edit, kernelKnows: createdAs)
    }

    /// A contact or plan written whole by a program shown `shown`, onto
    /// the stored card `previous` when that has changed since (`CardRebase`):
    /// a change that synced in meanwhile is not undone by the write.
    func rebasedCard(_ bytes: [UInt8], shown: [UInt8]?, previous: RowContent?) -> [UInt8] {
        let rules: CardRules
        switch previous {
        case .contact?: rules = Contact.rules
        case .plan?: rules = Plan.rules
        default: return bytes
        }
        // Shown an empty file (just made, or `touch`ed into a card with
        // only its name): the write is the whole card, not an edit of the
        // lines quire filled it with.
        guard let shown, !CardFile.isBlank(shown), let previous, let stored = RowFormat.render(previous) else { return bytes }
        return CardRebase.rebase(bytes, shown: shown, onto: stored, rules: rules)
    }

    /// Brings the directory view up to date after a write of ours.
    /// `kernelKnows`: the name the kernel itself created the file under; if
    /// the listing now shows the row under that name, the kernel's entry is
    /// right and is not dropped (dropping it cost a lookup at the next open
    /// and made the kernel forget the inode of every file just created).
    /// `removed`: a row the same transaction made a tombstone of (the
    /// source of a save by rename): ours too, so the change feed neither
    /// lists it again from a round read before the rename nor tells
    /// watchers of a removal the kernel made itself.
    func recordWrite(_ ref: RowRef, _ edit: ReplicaStore.MountEdit, kernelKnows: CanonicalName? = nil, removed: RowRef? = nil) {
        kernelCache.rowChanged(ref)
        guard let seq = edit.seq else { return }
        kernelCache.recordOwnWrite(ref, version: seq)
        if let removed, removed != ref { kernelCache.recordOwnWrite(removed, version: seq) }
        let folder = names.folder(of: ref)
        var invalidations = names.apply(RowSummary(row: edit.row, seq: seq))
        if let name = kernelKnows, folder == names.folder(of: ref),
           names.listing(ref.namespace)?.key(named: name, in: folder.folderKey) == ref.key {
            invalidations.removeAll { $0 == .entry(parent: names.directoryInode(folder), name: name) }
        }
        kernelCache.invalidate(invalidations)
    }

    /// Text that cannot become a row: refused at flush (close() fails), and
    /// kept beside the file as `<name>.rejected` so not a word is lost.
    private func reject(_ ref: RowRef, copy: WorkingCopy, previous: RowContent?, error: FormatError, name: String) {
        let fileName = displayName(ref)
        let keptName = CanonicalName(fileName + ".rejected")
        let folder = names.folder(of: ref)
        var kept = "and your text is kept in \(folderPath(folder))/\(keptName) (on this device only)"
        do {
            try scratch.replaceContents(folder, keptName, with: copy.content)
        } catch {
            kept = "and your text could not be kept (\(error)): save it again elsewhere"
        }
        log.problem("\(name) \(error.message); not saved, \(kept)")
        kernelCache.invalidate(.entry(parent: names.directoryInode(folder), name: keptName))
        revertToStored(ref, copy: copy, previous: previous)
    }

    /// The copy shows the stored version again (nothing of it was saved).
    private func revertToStored(_ ref: RowRef, copy: WorkingCopy, previous: RowContent?) {
        var reverted = copy
        reverted.isDirty = false
        reverted.content = previous.flatMap(RowFormat.render) ?? []
        openFiles.keep(reverted, for: ref)
        kernelCache.invalidateInodes(names.inodes.inodesOfRow[ref] ?? [])
    }

    /// The last handle closed with text that could not be committed (disk
    /// full, say): keep it in the scratch area and say so.
    func keepUnsaved(_ ref: RowRef, because reason: String) {
        guard let copy = openFiles.copy(ref), copy.isDirty else { return }
        let keptName = CanonicalName(displayName(ref) + ".unsaved")
        let folder = names.folder(of: ref)
        let kept = (try? scratch.replaceContents(folder, keptName, with: copy.content)) != nil
        // A cut copy (the disk full) would pass for the text: none is better.
        if !kept { try? scratch.remove(folder, keptName) }
        log.problem("\(rowPath(ref)) could not be saved (\(reason)); "
                    + (kept ? "the text is kept in \(folderPath(folder))/\(keptName)" : "and could not be kept either"))
        // The file shows the stored text again: the kernel drops the size
        // and pages it holds from the unsaved writes (an ftruncate that
        // grew the file showed its new size until the cache timed out).
        kernelCache.invalidate(.entry(parent: names.directoryInode(folder), name: keptName))
        kernelCache.invalidateInodes(names.inodes.inodesOfRow[ref] ?? [])
    }

    /// The last handle on a row went away (or none ever held the copy):
    /// commit what is unsaved and drop the copy. `wrote`: the handle closed
    /// was open for writing, and a claim's grace starts again from here (a
    /// program that only reads the file now and then must not keep its
    /// name from the one every device gives it).
    func releaseWorkingCopy(_ ref: RowRef, process: Int32? = nil, wrote: Bool = true) {
        guard openFiles.openCount(of: ref) == 0 else { return }
        if wrote { names.renewClaim(ref, at: Date()) }
        guard let copy = openFiles.copy(ref) else { return }
        if copy.isDirty {
            do { try commit(ref, shown: nil, process: process) } catch { keepUnsaved(ref, because: "\(error)") }
        }
        if openFiles.dropCopyIfUnheld(ref)?.isNew == true {
            // Created, never committed (its text was refused): it never existed.
            names.removePending(ref)
            _ = names.endClaim(ref)
        }
    }

    /// A detached row whose name came back: the row again. Its `.bak`
    /// copy, if the program keeps it, waits as a temp file does, then
    /// syncs as a file of its own.
    func reclaimDetached(_ ref: RowRef) {
        guard let backup = names.reattach(ref)?.backup, scratch.status(backup.folder, backup.name) != nil else { return }
        provisional.add(backup, at: Date())
        wakeFeed?()
    }

    /// Deletes a detached row whose name did not come back.
    func finishDetach(_ ref: RowRef) {
        guard let detached = names.reattach(ref) else { return }
        if let backup = detached.backup, scratch.status(backup.folder, backup.name) != nil,
           case .row(let title, let kind) = FileNames.meaning(of: backup.name, in: .notebook) {
            // `mv NAME.md NAME.md.bak`, the name not written again: the
            // rename it was, the row (key, history) under the backup's name.
            let inode = names.inodes.inode(forScratch: backup.folder, backup.name)
            do {
                try apply(RenamePlanner.newRow(from: backup, ref: ref, title: title, kind: kind, inode: inode))
                kernelCache.invalidateInodes([inode])
                return
            } catch {
                log.problem("\(folderPath(backup.folder))/\(backup.name) stays on this device: the note renamed to it could not take it (\(error))")
            }
        }
        do {
            // Always a tombstone: a sibling may have pulled the row already,
            // and only a tombstone keeps it from coming back from there.
            recordWrite(ref, try store.deleteFromMount(ref.namespace, ref.key))
        } catch {
            log.problem("could not delete \(ref.namespace.name)/\(ref.key.hex) after it was renamed away: \(error)")
        }
    }
}
