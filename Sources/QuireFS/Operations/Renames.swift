import Foundation
import QuireCore
import QuireFuse
import QuireStore

/// unlink and rename. A rename is planned by `RenamePlanner` from the
/// tables' state, then applied to the store, then to scratch files, then
/// to the tables (see `RenamePlan`).
extension QuireFileSystem {
    public func unlink(parent: FuseInode, name typed: String, request: FuseRequest) throws {
        let name = CanonicalName(typed)
        try locked { () throws(FuseError) in
            // The change feed telling watchers of a name that went: it is gone already.
            if case .removing? = watcherNotices.announced(.init(parent: parent.rawValue, name: name), to: request.pid) { return }
            try unlink(name, in: parent.rawValue)
            forgetCanonicalForm(of: typed, name, in: parent.rawValue)
        }
    }

    private func unlink(_ name: CanonicalName, in parent: UInt64) throws(FuseError) {
        let folder = try folder(parent)
        guard let namespace = folder.namespace else {
            guard scratch.status(.root, name) != nil else { throw .noEntry }
            try scratch.remove(.root, name)
            names.inodes.dropScratch(.root, name)
            return
        }
        switch try resolve(name, in: folder) {
        case .none:
            guard let copy = conflictCopy(named: name, in: folder) else { throw .noEntry }
            try discardConflictCopy(copy)
        case .scratch(let folder, let name):
            try scratch.remove(folder, name)
            let inode = names.inodes.inode(forScratch: folder, name)
            if openFiles.handles(where: { $0.inode == inode }).isEmpty {
                names.inodes.dropScratch(folder, name)
            } else {
                names.inodes.orphanScratch(folder, name)
            }
            scratchChanged(name)
        case .row(let ref) where names.isFolder(ref):
            throw .isDirectory
        case .row(let ref):
            if MountLayout.isReadOnly(namespace) {
                throw refuse(.permissionDenied, "\(namespace.name)/\(name) cannot be deleted: memory is append-only (record an event that buries it)")
            }
            let wasNew = openFiles.copy(ref)?.isNew == true
            // What this device showed of it, while the tables still say (else
            // the trash has it, read only if the name is created again).
            let text = lastShown[ref] ?? openFiles.copy(ref)?.content
            orphanOpenFiles(of: ref)
            kernelCache.invalidate(names.endClaim(ref))
            if wasNew {
                names.removePending(ref)
                return
            }
            // Deleted by a sibling already, kept listed for its program
            // (`ChangeFeed.ghostGrace`): the deletion stands, and shows now.
            if ghosts.remove(ref), unlistIfVanished(ref) { return }
            do {
                let edit = try store.deleteFromMount(namespace, ref.key)
                recordWrite(ref, edit)
                if !edit.keptInTrash {
                    log.problem("\(folderPath(folder))/\(name) deleted without a copy in the trash: the disk is full")
                }
            } catch {
                throw storeFailure(error, doing: "delete \(folderPath(folder))/\(name)")
            }
            if namespace == .notebook { recentlyRemoved.record(.init(ref: ref, text: text, at: Date()), name: name, in: folder) }
        }
    }

    public func rename(parent: FuseInode, name typed: String, newParent: FuseInode, newName typedNew: String,
                       flags: FuseRenameFlags, request: FuseRequest) throws {
        let name = CanonicalName(typed), newName = CanonicalName(typedNew)
        try locked { () throws(FuseError) in
            // The change feed telling watchers of a sibling's rename: it happened already.
            let from = WatcherNotices.Slot(parent: parent.rawValue, name: name)
            if case .renaming? = watcherNotices.announced(from, to: request.pid) {
                watcherNotices.noteAnswered(from)
                return
            }
            func inodeNamed(_ name: CanonicalName, in parent: UInt64) -> UInt64? {
                (try? resolve(name, in: try folder(parent))).flatMap { inode(of: $0) }
            }
            let moved = inodeNamed(name, in: parent.rawValue)
            try rename(name, in: parent.rawValue, to: newName, in: newParent.rawValue, flags: flags,
                       process: processGroups.process(of: request.pid))
            // The kernel moved its entry to the new name: when the tables give
            // that name the same file, the entry stays (a shell in a renamed
            // folder keeps its path).
            if !flags.contains(.exchange), let moved, inodeNamed(newName, in: newParent.rawValue) == moved {
                kernelCache.kernelHolds(parent: newParent.rawValue, name: newName)
            }
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

    /// `process`: the one renaming (a save by rename's baseline is what it was shown).
    func rename(_ name: CanonicalName, in parent: UInt64, to newName: CanonicalName, in newParent: UInt64,
                flags: FuseRenameFlags, process: Int32? = nil) throws(FuseError) {
        let request = RenameRequest(from: try folder(parent), name: name, to: try folder(newParent), newName: newName, flags: flags)
        // Only a name with the marker can be a copy: a save by rename pays nothing.
        if let copy = conflictCopy(named: name, in: request.from), try resolve(name, in: request.from) == .none {
            guard flags.isEmpty else { throw .invalid }
            return try renameConflictCopy(copy, to: newName, in: request.to)
        }
        let facts = try renameFacts(request, process: process)
        let plan: RenamePlan
        do {
            plan = try RenamePlanner.plan(request, facts)
        } catch {
            throw error.message.map { refuse(error.error, $0) } ?? error.error
        }
        // A temp file's tags (rsync -X and cp -a set them before the rename): the note's.
        let tags = facts.sourceInode.flatMap { transientAttributes[$0]?[CanonicalName(Self.tagsAttribute)] }.flatMap(Self.tags)
        try apply(plan, process: process, tags: tags)
        if facts.removedAgain != nil { _ = recentlyRemoved.take(request.newName, in: request.to, at: Date()) }
        // A new row made under a marked name keeps it, as a created one does.
        if facts.freshKeyKeepsMarker, let namespace = request.to.namespace,
           try listing(namespace).rows[facts.freshKey] != nil, !names.isClaimed(RowRef(namespace: namespace, key: facts.freshKey)) {
            kernelCache.invalidate(names.claim(RowRef(namespace: namespace, key: facts.freshKey), at: Date(), keepingMarker: true))
        }
        if facts.movedAway != nil {
            // The kernel now holds the old name for the note, which is listed
            // where the sibling put it: it forgets that name once this rename
            // has returned. The program's next save goes the same way.
            kernelCache.invalidate(.entry(parent: names.directoryInode(request.to), name: request.newName))
        } else {
            movedAway.forget(request.newName, in: request.to)
        }
    }

    /// What the planner needs to know about the two names.
    private func renameFacts(_ request: RenameRequest, process: Int32?) throws(FuseError) -> RenameFacts {
        let source = try resolve(request.name, in: request.from)
        var target = try resolve(request.newName, in: request.to)
        var movedAway: RowRef?
        let sourceRow: RowRef? = if case .row(let ref) = source { ref } else { nil }
        if target == .none, request.flags.isEmpty, let moved = self.movedAway.row(leaving: request.newName, in: request.to, at: Date()),
           sourceRow != moved, !(sourceRow.map(names.isFolder) ?? false), lastShown.baseline(moved, process: process) != nil,
           try listing(moved.namespace).rows[moved.key] != nil, !names.isFolder(moved) {
            target = .row(moved)
            movedAway = moved
        }
        let fresh = try request.to.namespace.map { namespace throws(FuseError) in try newRowKey(named: request.newName, in: namespace) }
        // A temp file (rsync's, an editor's) renamed to a marked name is a
        // new row made under it, as a created one is.
        if let fresh, target == .none, sourceRow == nil, let namespace = request.to.namespace,
           case .row(let title, let kind) = FileNames.meaning(of: request.newName, in: namespace) {
            try refuseUnkeptMarker(request.newName, key: fresh.key, title: title, kind: kind, in: request.to)
        }
        // A file renamed to a name its row would not be listed under.
        if target == .none, !(sourceRow.map(names.isFolder) ?? false), let namespace = request.to.namespace,
           case .row(let title, let kind) = FileNames.meaning(of: request.newName, in: namespace), !isIgnored(request.newName, in: request.to) {
            try refuseEscapedName(request.newName, title: title, kind: kind, in: request.to)
        }
        var facts = RenameFacts(source: source, target: target, sourceInode: inode(of: source), targetInode: inode(of: target),
                                freshKey: fresh?.key ?? RowKey.random(using: SystemRandom()))
        facts.freshKeyKeepsMarker = fresh?.keepsMarker ?? false
        facts.movedAway = movedAway
        for case .row(let ref) in [source, target] where openFiles.copy(ref)?.isNew == true { facts.newRows.insert(ref) }
        facts.targetIgnored = target == .none && isIgnored(request.newName, in: request.to)
        if case .row(let ref) = source, target == .none, !facts.targetIgnored, !facts.newRows.contains(ref), !names.isFolder(ref),
           ref.namespace == .notebook, request.from == request.to, request.flags.isEmpty,
           request.newName.text == request.name.text + ".bak", request.name.text.hasSuffix(".md") {
            facts.isBackupStep = true
        }
        if case .row(let ref) = source {
            let listed = try listing(ref.namespace).rows[ref.key]?.title
            facts.sourceTitle = openFiles.copy(ref)?.title ?? listed ?? ""
        }
        if let namespace = request.to.namespace, case .row(let title, _) = FileNames.meaning(of: request.newName, in: namespace) {
            facts.reclaimable = names.detachedRow(titled: title, in: request.to)
            if namespace == .notebook, target == .none, let removal = recentlyRemoved.removal(request.newName, in: request.to, at: Date()),
               try listing(namespace).rows[removal.ref.key] == nil, source != .row(removal.ref) {
                facts.removedAgain = removal.ref
            }
        }
        if case .row(let ref) = source, names.isFolder(ref) {
            facts.sourceIsFolder = true
            facts.destinationWithinSource = try listing(.notebook).isWithin(request.to.folderKey, ref.key)
        }
        if case .row(let ref) = target, names.isFolder(ref) {
            facts.targetIsFolder = true
            let inside = Folder.subfolder(ref.key)
            facts.targetFolderIsEmpty = try listing(.notebook).count(in: ref.key) == 0 && names.pendingEntries(inside).isEmpty
                && scratch.names(inside).isEmpty
        }
        return facts
    }

    // MARK: Applying a plan

    /// `tags`: the `user.quire.tags` of a temp file renamed onto a note.
    func apply(_ plan: RenamePlan, process: Int32? = nil, tags: [String]? = nil) throws(FuseError) {
        // The bytes the plan moves, read before anything changes.
        var bytes: [RenamePlan.Bytes: [UInt8]] = [:]
        for source in plan.byteSources {
            switch source {
            case .row(let ref): bytes[source] = try currentBytes(ref)
            case .scratch(let place): bytes[source] = try scratch.contents(place.folder, place.name)
            }
        }
        if let ref = plan.reclaim { reclaimDetached(ref) }
        // A row whose stored text is not the bytes the kernel saw written
        // (a sibling's paragraphs merged in): its inodes, the one the kernel
        // moved to its name included, hold a stale size and pages.
        var mergedInto: RowRef? = nil
        switch plan.store {
        case .replace(let target, let title, let source, let removing, let sourceName, let placement)?:
            var time: Int64? = nil
            var scratchTags: [String]? = nil
            var moved = bytes[source]!
            switch source {
            case .scratch(let place):
                time = scratch.modificationTime(place.folder, place.name)
                scratchTags = tags
            case .row(let ref):
                moved = movedText(ref, current: moved, onto: target, process: process)
            }
            let stored = try replace(target, titled: title, with: moved, removing: removing, sourceName: sourceName,
                                     placement: placement, modifiedAt: time, tags: scratchTags, process: process)
            if stored != bytes[source]! { mergedInto = target }
        case .retitle(let ref, let title, let placement)?:
            try retitle(ref, to: title, placement: placement)
        case .moveFolder(let ref, let title, let into, let replacing)?:
            try moveFolder(ref, title: title, into: into, replacing: replacing)
        case .exchange(let a, let b)?:
            try swapContents(a, bytes: bytes[.row(b)]!, b, bytes: bytes[.row(a)]!)
        case nil:
            break
        }
        for change in plan.scratch {
            if case .rename(let from, let to, _) = change { scratchChanged(from.name); scratchChanged(to.name) }
            switch change {
            case .rename(let from, let to, let flags): try scratch.rename((from.folder, from.name), (to.folder, to.name), flags: flags)
            case .write(let place, let source): try scratch.replaceContents(place.folder, place.name, with: bytes[source]!)
            case .remove(let place): try? scratch.remove(place.folder, place.name)
            }
        }
        for change in plan.tables { apply(change, bytes: bytes) }
        if let mergedInto { kernelCache.invalidateInodes(names.inodes.inodesOfRow[mergedInto] ?? []) }
    }

    private func apply(_ change: RenamePlan.TableChange, bytes: [RenamePlan.Bytes: [UInt8]]) {
        switch change {
        case .repoint(let inode, let object): names.inodes.repoint(inode, to: object)
        case .moveOpenFiles(let inode, let ref): moveOpenFiles(of: inode, to: ref)
        case .swapOpenFiles(let aInode, let bInode, let a, let b): swapOpenFiles(aInode, bInode, a, b)
        case .orphanOpenFiles(let ref): orphanOpenFiles(of: ref)
        case .moveRowHandlesToScratch(let ref, let place, let text):
            moveRowHandles(of: ref, toScratch: place.folder, place.name, bytes: bytes[text] ?? [])
        case .adoptScratchHandles(let inode, let ref): adoptScratchHandles(of: inode, to: ref)
        case .renamePending(let ref, let name, let folder, let title, let placement):
            names.addPending(name, in: folder, ref)
            openFiles.modifyCopy(ref) { $0.title = title; $0.place(placement) }
        case .retitleCopy(let ref, let title, let placement): openFiles.modifyCopy(ref) { $0.title = title; $0.place(placement) }
        case .forgetPending(let ref): names.removePending(ref)
        case .markClean(let ref): openFiles.modifyCopy(ref) { $0.isDirty = false }
        case .settleReplacedSource(let ref):
            names.removePending(ref)
            openFiles.modifyCopy(ref) { copy in
                copy.isDirty = false
                copy.isNew = false
            }
            kernelCache.invalidate(names.unlist(ref))
        case .detach(let ref, let title, let name, let folder, let backup):
            names.detach(ref, DetachedRow(title: title, name: name, folder: folder, since: Date(), backup: backup))
            wakeFeed?()
        }
    }

    // MARK: Store changes

    /// `bytes` become a new version of `targetRef` (created if needed), and
    /// `source` becomes a tombstone. One transaction. Returns the text the
    /// row shows now.
    private func replace(_ targetRef: RowRef, titled newTitle: String?, with bytes: [UInt8], removing source: RowRef?,
                         sourceName: String, placement: Placement?, modifiedAt: Int64?, tags: [String]? = nil,
                         process: Int32?) throws(FuseError) -> [UInt8] {
        let namespace = targetRef.namespace
        // The new bytes replace the body: the old one is not read here.
        let stored: (row: Row, changeNumber: Int64)?
        do {
            stored = try store.rowWithoutBody(namespace, targetRef.key)
        } catch {
            throw storeFailure(error, doing: "read \(namespace.name)/\(targetRef.key.hex)")
        }
        let previous = stored?.row.content
        // A target the store holds deleted that the tables still list (a
        // file created here, still claimed, that a sibling deleted): its
        // name, kind and folder are the ones listed.
        let listed = previous == nil ? names.listing(namespace)?.rows[targetRef.key] : nil
        let title = newTitle ?? openFiles.copy(targetRef)?.title ?? previous?.displayName ?? listed?.title ?? ""
        var shown = lastShown.baseline(targetRef, process: process)
        var shownVersion: Int64? = nil
        if shown == nil, previous != nil, let version = stored?.changeNumber {
            shown = unkeptBaseline(targetRef, version: version)
            // The stored text stands for the baseline only while it is this version.
            if shown == nil { shownVersion = version }
        }
        var content = try parseForRename(namespace, title: title, bytes: rebasedCard(bytes, shown: shown, previous: previous), previous: previous,
                                         key: targetRef.key, name: sourceName)
        if case .note(var note) = content {
            // The target keeps its place; a new row goes where it was named.
            if case .note(let old)? = previous {
                note.kind = old.kind
                note.folder = old.folder
            } else if let listed {
                note.kind = listed.kind
                note.folder = listed.declaredFolder
            }
            if let placement {
                note.kind = placement.kind
                note.folder = placement.folder
            }
            // A file renamed in keeps the time it was given (rsync, cp -p).
            note.modifiedAt = modifiedAt
            if let tags { note.tags = tags }
            content = .note(note)
        }
        // The limit writes and closes keep: a file over it stays where it is.
        let bodyBytes = RowLimits.bodyBytes(of: content)
        guard bodyBytes <= RowLimits.maxBodyBytes else {
            throw refuse(.fileTooLarge, "\(namespace.name)/\(sourceName) holds \(RowLimits.describe(bodyBytes)), over the "
                         + "\(RowLimits.describe(RowLimits.maxBodyBytes)) one version of a row may hold and still sync; "
                         + "the rename is refused with EFBIG and the file keeps its name")
        }
        let edit: ReplicaStore.MountEdit
        do {
            // The editor wrote the temp file from what this device last
            // showed of the target: deletions are computed against that.
            edit = try store.replaceFromMount(target: targetRef.key, with: content, removing: source?.key, shown: shown,
                                              shownVersion: shownVersion)
        } catch {
            throw storeFailure(error, doing: "save \(namespace.name)/\(sourceName) over its target")
        }
        recordWrite(targetRef, edit, removed: source)
        // Shown to the writer: its own bytes (see `commit`).
        let rendered = edit.row.content.flatMap(RowFormat.render)
        lastShown.record(targetRef, bytes, process: process, version: rendered == bytes ? edit.seq : nil, writing: .whole(over: shown))
        return rendered ?? bytes
    }

    /// What a save by rename moves from a row onto a note: the row's text,
    /// and, when a sibling wrote over the row after this device's program
    /// wrote it (two devices saving through one temp file name), the
    /// program's own paragraphs as well. The rename deletes from the note
    /// only what the program left out of what it wrote, never what the
    /// sibling's text of the temp file lacks.
    private func movedText(_ source: RowRef, current: [UInt8], onto target: RowRef, process: Int32?) -> [UInt8] {
        guard target.namespace == .notebook || target.namespace == .saga,
              names.listing(target.namespace)?.rows[target.key]?.kind == .note,
              let written = lastShown.baseline(source, process: process), written != current else { return current }
        return Array(Paragraphs.union(String(decoding: written, as: UTF8.self), String(decoding: current, as: UTF8.self)).utf8)
    }

    /// A new title for a stored row. A contact's or plan's file name is a
    /// handle the client chose (vdir), not the person's name: the card is
    /// left as it is.
    private func retitle(_ ref: RowRef, to title: String, placement: Placement?) throws(FuseError) {
        guard let stored = try storedContent(ref) else { throw .noEntry }
        var content = stored
        switch stored {
        case .note(var note):
            note.title = title
            if let placement {
                note.kind = placement.kind
                note.folder = placement.folder
            }
            content = .note(note)
        case .plan(var plan): plan.title = title; content = .plan(plan)
        case .contact(var contact): contact.title = title; content = .contact(contact)
        default: throw .notPermitted
        }
        do { recordWrite(ref, try store.putFromMount(content, key: ref.key)) } catch {
            throw storeFailure(error, doing: "rename \(ref.namespace.name)/\(displayName(ref))")
        }
    }

    /// A notebook folder renamed or moved: one row, one transaction, with
    /// the empty folder it replaces.
    private func moveFolder(_ ref: RowRef, title: String, into folder: RowKey?, replacing: RowRef?) throws(FuseError) {
        guard case .note(var note)? = try storedContent(ref) else { throw .noEntry }
        note.title = title
        note.folder = folder
        do {
            let edit = try store.replaceFromMount(target: ref.key, with: .note(note), removing: replacing?.key)
            if let replacing {
                scratch.removeDirectory(.subfolder(replacing.key))
                kernelCache.invalidate(names.unlist(replacing))
                // Replaced, its inode is dead in the kernel (see `retire`).
                names.inodes.retire(replacing)
            }
            recordWrite(ref, edit, removed: replacing)
        } catch {
            throw storeFailure(error, doing: "move the folder \(rowPath(ref))")
        }
    }

    /// RENAME_EXCHANGE of two rows: each name keeps its row (and key) and
    /// shows the other's text. Both edits in one transaction.
    private func swapContents(_ a: RowRef, bytes aBytes: [UInt8], _ b: RowRef, bytes bBytes: [UInt8]) throws(FuseError) {
        for ref in [a, b] where openFiles.copy(ref)?.isNew == true { try commit(ref, shown: nil) }
        let aPrevious = try storedContent(a), bPrevious = try storedContent(b)
        // Each name keeps its row's title, folder and kind: only the bytes move.
        let aContent = Self.keepingPlace(of: aPrevious, try parseForRename(a.namespace, title: aPrevious?.displayName ?? "", bytes: aBytes,
                                                                            previous: aPrevious, key: a.key, name: displayName(b)))
        let bContent = Self.keepingPlace(of: bPrevious, try parseForRename(b.namespace, title: bPrevious?.displayName ?? "", bytes: bBytes,
                                                                            previous: bPrevious, key: b.key, name: displayName(a)))
        do {
            let edits = try store.putAllFromMount([(aContent, a.key), (bContent, b.key)])
            recordWrite(a, edits[0])
            recordWrite(b, edits[1])
        } catch {
            throw storeFailure(error, doing: "exchange \(displayName(a)) and \(displayName(b))")
        }
    }

    /// `content` placed where `previous` was (a notebook row's kind and folder).
    static func keepingPlace(of previous: RowContent?, _ content: RowContent) -> RowContent {
        guard case .note(let old)? = previous, case .note(var note) = content else { return content }
        note.kind = old.kind
        note.folder = old.folder
        return .note(note)
    }

    // MARK: Helpers

    /// The text a row's file shows now (its open working copy, else stored).
    func currentBytes(_ ref: RowRef) throws(FuseError) -> [UInt8] {
        do throws(FuseError) {
            return try workingCopy(ref).content
        } catch .noEntry {
            // Deleted by a sibling while claimed here (`applyExternal`): what this device wrote.
            guard let written = claimedText(ref) else { throw .noEntry }
            return written
        } catch {
            throw error
        }
    }

    /// What this device wrote to a row it still claims (nil: not claimed,
    /// or nothing kept): a claimed row a sibling deletes keeps its name and
    /// this text until its rename or the claim's end.
    func claimedText(_ ref: RowRef) -> [UInt8]? {
        names.isClaimed(ref) ? lastShown[ref] : nil
    }

    private func storedContent(_ ref: RowRef) throws(FuseError) -> RowContent? {
        do {
            return try store.row(ref.namespace, ref.key)?.content
        } catch {
            throw storeFailure(error, doing: "read \(ref.namespace.name)/\(ref.key.hex)")
        }
    }

    private func parseForRename(_ namespace: Namespace, title: String, bytes: [UInt8], previous: RowContent?,
                                key: RowKey, name: String) throws(FuseError) -> RowContent {
        do {
            return try RowFormat.parse(namespace, title: title, bytes: bytes, previous: previous, key: key)
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
}
