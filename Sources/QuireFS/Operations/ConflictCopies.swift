import QuireCore
import QuireFuse
import QuireStore

/// Conflict copies: an attachment edited on two devices at once shows the
/// later version under its name and each other version beside it, as
/// `name.sync-conflict-YYYYMMDD-HHMMSS-DEVICE.ext` (`ConflictCopy`). The
/// copies are read-only views of the row's losing versions: deleting one
/// drops that version; renaming one keeps it as a file of its own (or, onto
/// the original name, makes it the file's text). Any other edit of the
/// file first turns each losing version into a file of its own (the store
/// does that), so no version goes unseen.
extension QuireFileSystem {
    struct ShownConflictCopy {
        var name: CanonicalName
        var ref: RowRef
        var dot: Dot
        var version: Note
    }

    /// The conflict copies `folder` shows, by name order.
    func conflictCopies(in folder: Folder) -> [ShownConflictCopy] {
        guard folder.namespace == .notebook, let listing = try? listing(.notebook) else { return [] }
        var copies: [ShownConflictCopy] = []
        for key in listing.conflicted(in: folder.folderKey) {
            guard let row = try? store.row(.notebook, key) else { continue }
            for head in ConflictCopy.losingVersions(of: row) {
                guard case .note(let version) = head.content else { continue }
                let name = CanonicalName(FileNames.literalName(ConflictCopy.title(of: version, writtenBy: head.dot)))
                // A file of that name (the copy made a file of its own) wins.
                if listing.key(named: name, in: folder.folderKey) != nil { continue }
                copies.append(ShownConflictCopy(name: name, ref: RowRef(namespace: .notebook, key: key), dot: head.dot, version: version))
            }
        }
        return copies.sorted { $0.name < $1.name }
    }

    func conflictCopy(named name: CanonicalName, in folder: Folder) -> ShownConflictCopy? {
        guard name.text.contains(ConflictCopy.marker) else { return nil }
        return conflictCopies(in: folder).first { $0.name == name }
    }

    /// The version a conflict copy shows, if the row still holds it.
    func conflictVersion(_ ref: RowRef, _ dot: Dot) -> Note? {
        guard let row = try? store.row(ref.namespace, ref.key) else { return nil }
        for head in ConflictCopy.losingVersions(of: row) where head.dot == dot {
            if case .note(let version) = head.content { return version }
        }
        return nil
    }

    func conflictCopyAttributes(_ inode: UInt64, _ ref: RowRef, _ dot: Dot) throws(FuseError) -> FuseAttributes {
        guard let version = conflictVersion(ref, dot) else { throw .noEntry }
        let time = version.modifiedAt.map(FuseTimestamp.init(nanoseconds:)) ?? FuseTimestamp(seconds: version.updatedAt.seconds)
        return FuseAttributes(inode: FuseInode(inode), kind: .regular, permissions: 0o444, uid: owner.uid, gid: owner.gid,
                              size: UInt64(version.body?.count ?? version.length ?? 0), accessTime: time, modificationTime: time,
                              changeTime: FuseTimestamp(seconds: version.updatedAt.seconds))
    }

    func openConflictCopy(_ inode: UInt64, _ ref: RowRef, _ dot: Dot, flags: FuseOpenFlags) throws(FuseError) -> FuseOpenReply {
        if flags.isWritable {
            throw refuse(.permissionDenied, "\(rowPath(ref)): its conflict copies are read-only; copy one to edit it, or rename it to keep it")
        }
        guard let version = conflictVersion(ref, dot) else { throw .noEntry }
        guard let body = version.body else {
            throw refuse(.io, "\(rowPath(ref)): this conflict copy's bytes are offloaded; open the file itself once to bring them back")
        }
        return FuseOpenReply(handle: openFiles.add(OpenFile(target: .control(body), inode: inode, flags: flags, shown: body)),
                             options: [.noFlush])
    }

    /// rm of a conflict copy: that version is dropped from the row.
    func discardConflictCopy(_ copy: ShownConflictCopy) throws(FuseError) {
        do { recordWrite(copy.ref, try store.discardVersion(copy.ref.key, dot: copy.dot)) } catch {
            throw storeFailure(error, doing: "drop the conflict copy \(copy.name) of \(rowPath(copy.ref))")
        }
        forgetCopyName(copy)
    }

    /// The copy's name went away: the kernel must not keep its entry.
    private func forgetCopyName(_ copy: ShownConflictCopy) {
        kernelCache.invalidate(.entry(parent: names.directoryInode(names.folder(of: copy.ref)), name: copy.name))
    }

    /// mv of a conflict copy: onto its file's own name, the version becomes
    /// the file's text; onto a free name, a file of its own (and the row
    /// drops it). Other targets are refused.
    func renameConflictCopy(_ copy: ShownConflictCopy, to newName: CanonicalName, in folder: Folder) throws(FuseError) {
        guard folder.namespace == .notebook, let body = copy.version.body else {
            throw refuse(.notPermitted, "\(copy.name): a conflict copy can be renamed within the notebook, once its bytes are here")
        }
        defer { forgetCopyName(copy) }
        switch try resolve(newName, in: folder) {
        case .row(let target) where target == copy.ref:
            var chosen = copy.version
            chosen.modifiedAt = nil
            do { recordWrite(copy.ref, try store.discardVersion(copy.ref.key, dot: copy.dot, keeping: .note(chosen))) } catch {
                throw storeFailure(error, doing: "keep the conflict copy \(copy.name) as \(rowPath(copy.ref))")
            }
        case .none:
            guard case .row(let title, let kind) = FileNames.meaning(of: newName, in: .notebook) else {
                throw refuse(.notPermitted, "\(newName) is not a name a synced file can have here")
            }
            let zero = Timestamp(seconds: 0)
            let note = Note(title: title, body: body, createdAt: zero, updatedAt: zero, kind: kind, folder: folder.folderKey,
                            modifiedAt: copy.version.modifiedAt)
            do {
                let created = try store.putFromMount(.note(note), key: nil)
                recordWrite(RowRef(namespace: .notebook, key: created.row.key), created)
                recordWrite(copy.ref, try store.discardVersion(copy.ref.key, dot: copy.dot))
            } catch {
                throw storeFailure(error, doing: "keep the conflict copy \(copy.name) as \(newName)")
            }
        default:
            throw refuse(.exists, "\(newName) exists: rename the conflict copy \(copy.name) to a free name, or onto its own file")
        }
    }
}
