import Foundation
import Glibc
import QuireCore
import QuireFuse
import QuireStore

/// create(2) through the mount: what a new name becomes (a row, a file
/// that waits as temp files do, or a local scratch file) and the key a
/// new row gets.
extension QuireFileSystem {
    public func create(parent: FuseInode, name typed: String, mode: UInt32, flags: FuseOpenFlags,
                       request: FuseRequest) throws -> FuseCreateReply {
        let name = CanonicalName(typed)
        return try locked { () throws(FuseError) -> FuseCreateReply in
            if case .creating(let ref)? = watcherNotices.announced(.init(parent: parent.rawValue, name: name), to: request.pid) {
                return try announcedCreate(ref, name, in: parent.rawValue, flags: flags)
            }
            var reply = try createFile(parent.rawValue, name, mode: mode, flags: flags, process: processGroups.process(of: request.pid))
            reply.entry = spelled(typed, name, reply.entry)
            return reply
        }
    }

    /// The change feed's own O_CREAT open of a name a sibling made, which
    /// raises IN_CREATE for file watchers (`WatcherNotices`): the row as it
    /// is, on a handle that reads nothing and writes nothing.
    private func announcedCreate(_ ref: RowRef, _ name: CanonicalName, in parent: UInt64, flags: FuseOpenFlags) throws(FuseError) -> FuseCreateReply {
        guard try resolve(name, in: try folder(parent)) == .row(ref), !names.isFolder(ref), let inode = inode(of: .row(ref)) else {
            throw .noEntry
        }
        let handle = openFiles.add(OpenFile(target: .control([]), inode: inode, flags: flags, shown: []))
        watcherNotices.noteAnswered(.init(parent: parent, name: name))
        return FuseCreateReply(entry: try entry(inode), open: FuseOpenReply(handle: handle, options: [.directIO, .noFlush]))
    }

    private func createFile(_ parent: UInt64, _ name: CanonicalName, mode: UInt32, flags: FuseOpenFlags,
                            process: Int32?) throws(FuseError) -> FuseCreateReply {
        let folder = try folder(parent)
        // The stored (NFC) form must fit too: it can be longer than the typed one.
        guard name.text.utf8.count <= FileNames.maximumNameBytes else {
            throw refuse(.nameTooLong, "\(describe(parent))/\(name.text.prefix(40))…: a name is at most 255 bytes in NFC (\(name.text.utf8.count) given)")
        }
        guard let namespace = folder.namespace else {
            guard FileNames.isJunk(name.text) else {
                throw refuse(.notPermitted, "\(name) refused: the top folder holds the namespace folders only; put notes in notebook/")
            }
            return try createScratch(.root, name, mode: mode, flags: flags)
        }
        if MountLayout.isReadOnly(namespace) {
            throw refuse(.permissionDenied, "\(namespace.name)/\(name) refused: memory is append-only (use 'quire put memory')")
        }
        switch FileNames.meaning(of: name, in: namespace) {
        case .junk:
            return try createScratch(folder, name, mode: mode, flags: flags)
        case .localOnly:
            // Another folder's file (`mv plans/X.ics saga/`, which the
            // kernel's EXDEV makes a copy and a delete): refused, so the copy
            // fails before the original is deleted on every device.
            if let home = FileNames.foreignRowName(name.text, in: namespace) {
                throw refuse(.notPermitted, "\(namespace.name)/\(name) refused: \(namespace.name)/ holds \(MountLayout.holds(namespace)); "
                             + "a file named so belongs in \(home.name)/ (here it would stay on this device only)")
            }
            // Listed in .quire/status; not logged: every sed -i makes one.
            return try createScratch(folder, name, mode: mode, flags: flags)
        case .row(let title, let kind):
            let isFree = try resolve(name, in: folder) == .none
            if isFree, isIgnored(name, in: folder) {
                return try createScratch(folder, name, mode: mode, flags: flags)
            }
            if isFree { try refuseEscapedName(name, title: title, kind: kind, in: folder) }
            // A temp file's name (not a row this mount is bringing back): local for a moment.
            if isFree, try startsProvisional(name, in: folder),
               names.detachedRow(titled: title, in: folder) == nil, !recentlyRemoved.holds(name, in: folder, at: Date()) {
                let reply = try createScratch(folder, name, mode: mode, flags: flags)
                // The feed looks again by the earliest deadline it was told
                // of, which a later one does not move: only a first is news.
                let isFirst = provisional.isEmpty
                provisional.add(ScratchPlace(folder: folder, name: name), at: Date())
                if isFirst { wakeFeed?() }
                return reply
            }
            return try createRow(folder, namespace: namespace, name: name, title: title, kind: kind, flags: flags, process: process)
        }
    }

    private func createScratch(_ folder: Folder, _ name: CanonicalName, mode: UInt32, flags: FuseOpenFlags) throws(FuseError) -> FuseCreateReply {
        let descriptor = try scratch.open(folder, name, flags: flags.rawValue | O_CREAT, mode: mode_t(mode & 0o7777))
        let inode = names.inodes.inode(forScratch: folder, name)
        let handle = openFiles.add(OpenFile(target: .scratch(descriptor), inode: inode, flags: flags, shown: []))
        return FuseCreateReply(entry: try entry(inode), open: FuseOpenReply(handle: handle, options: [.noFlush]))
    }

    private func createRow(_ folder: Folder, namespace: Namespace, name: CanonicalName, title: String, kind: NoteKind,
                           flags: FuseOpenFlags, process: Int32?) throws(FuseError) -> FuseCreateReply {
        // The name in another form (created meanwhile, or from a sibling):
        // the existing file is opened, never a twin made beside it.
        if case .row(let existing) = try resolve(name, in: folder), !unlistIfVanished(existing) {
            if flags.rawValue & O_EXCL != 0 { throw .exists }
            if names.isFolder(existing) { throw .isDirectory }
            let inode = names.inodes.inode(for: existing)
            let open = try openRow(existing, inode: inode, flags: flags, process: process)
            return FuseCreateReply(entry: try entry(inode), open: open)
        }
        // An editor that renamed this file to its backup name writes it
        // anew: the new file is the same row (same key, its history kept).
        var ref: RowRef
        var isNew = true
        var shown: [UInt8] = []
        var keepsMarker = false
        if let detachedRef = names.detachedRow(titled: title, in: folder) {
            reclaimDetached(detachedRef)
            ref = detachedRef
            isNew = false
        } else {
            switch namespace {
            case .saga: ref = RowRef(namespace: namespace, key: SagaEntry.key(for: title))
            case .settings: ref = RowRef(namespace: namespace, key: Setting.key(for: title))
            default:
                // Removed a moment ago under this name: the same row, written again.
                if let removal = recentlyRemoved.take(name, in: folder, at: Date()), try listing(namespace).rows[removal.ref.key] == nil {
                    ref = removal.ref
                    shown = removal.text ?? (try? store.deletedText(ref.key)).flatMap { $0 } ?? []
                } else {
                    let fresh = try newRowKey(named: name, in: namespace)
                    try refuseUnkeptMarker(name, key: fresh.key, title: title, kind: kind, in: folder)
                    ref = RowRef(namespace: namespace, key: fresh.key)
                    keepsMarker = fresh.keepsMarker
                }
            }
            if try listing(namespace).rows[ref.key] != nil { isNew = false }
        }
        var copy: WorkingCopy
        if isNew {
            copy = openFiles.copy(ref) ?? WorkingCopy(title: title, content: [], kind: kind, folder: folder.folderKey, isNew: true)
            names.addPending(name, in: folder, ref)
            kernelCache.invalidate(names.claim(ref, at: Date(), keepingMarker: keepsMarker))
            copy.willChange()
            // A row made (or made again after a remove) here: its text is whole.
            copy.isWrittenWhole = true
        } else {
            copy = try workingCopy(ref)
            shown = wholeReplacementBaseline(ref, copy, process: process)
            copy.empty()
        }
        copy.modifiedAt = .now
        openFiles.keep(copy, for: ref)
        let inode = names.inodes.inode(for: ref)
        kernelCache.distrustPages(of: inode)
        // A new row starts without session attributes: a saga date or
        // setting name created again gets its old inode number back.
        if isNew { transientAttributes.removeValue(forKey: inode) }
        let handle = openFiles.add(OpenFile(target: .row(ref), inode: inode, flags: flags, shown: shown, process: process))
        return FuseCreateReply(entry: try entry(inode), open: FuseOpenReply(handle: handle))
    }

    /// A new row's key. For a name with a key marker (`T%~1a2b3c4d.md`: a
    /// copy of a file that shared its title on another device), one that
    /// starts with that marker, so the row keeps the name it was made
    /// under while its claim lasts (`NameIndex.claim(keepingMarker:)`) and
    /// the plain name stays free for the copy's other file.
    func newRowKey(named name: CanonicalName, in namespace: Namespace) throws(FuseError) -> (key: RowKey, keepsMarker: Bool) {
        var bytes = RowKey.random(using: SystemRandom()).bytes
        if let marker = FileNames.markerKeyPrefix(of: name.text, in: namespace), marker.utf8.count == 8 {
            let digits = Array(marker.utf8)
            for i in 0..<4 { bytes[i] = UInt8(String(decoding: digits[(2 * i)..<(2 * i + 2)], as: UTF8.self), radix: 16) ?? bytes[i] }
            if let key = RowKey(bytes: bytes), try listing(namespace).rows[key] == nil { return (key, true) }
        }
        return (RowKey(bytes: bytes)!, false)
    }

    /// A new note, plan or card is listed under its title escaped, on
    /// every device; a name that does not escape back to itself (one with
    /// a control character, `new\nline.md`, or `%~` that is no key mark,
    /// `a%~b.md`) would not be listed under the name its program made: a
    /// mirror's next `rsync --delete` removed it and made it again, a
    /// tombstone and a new row each run. Refused, so the program is told.
    /// (Names with a key mark: `refuseUnkeptMarker`. Attachments and
    /// folders are listed as they are named.)
    func refuseEscapedName(_ name: CanonicalName, title: String, kind: NoteKind, in folder: Folder) throws(FuseError) {
        guard kind == .note, let namespace = folder.namespace, FileNames.markerKeyPrefix(of: name.text, in: namespace) == nil else { return }
        let parts = FileNames.nameParts(namespace: namespace, kind: kind, title: title, updatedAt: Timestamp(seconds: 0))
        let listed = parts.stem + parts.ext
        guard listed != name.text else { return }
        let why = FileNames.controlCharacter(in: title).map { "it holds a control character (\(String(format: "U+%04X", $0.value))), which names show escaped" }
            ?? "names show it escaped"
        throw refuse(.invalid, "\(folderPath(folder))/\(listed) refused (EINVAL): every device would list the file as '\(listed)', not under "
                     + "the name given (\(why)); name it so")
    }

    /// A new row named with a key marker keeps that name on every device
    /// only beside a file of its title whose key sorts before its own
    /// (every device gives the plain name to the smallest key). Anywhere
    /// else every device, and this one once its claim ends, would list it
    /// without the marker, and the name its program chose would change
    /// under it (a mirror's next `rsync --delete` or open by name fails):
    /// refused, so the program is told at once.
    func refuseUnkeptMarker(_ name: CanonicalName, key: RowKey, title: String, kind: NoteKind, in folder: Folder) throws(FuseError) {
        guard let namespace = folder.namespace, let marker = FileNames.markerKeyPrefix(of: name.text, in: namespace),
              marker.utf8.count == 8 else { return }
        let firsts = try listing(namespace).keys(titled: title, kind: kind, in: folder.folderKey).filter { $0 < key }
        guard firsts.isEmpty else { return }
        let zero = Timestamp(seconds: 0)
        let plain = FileNames.nameParts(namespace: namespace, kind: kind, title: title, updatedAt: zero)
        var instead = "name it '\(plain.stem + plain.ext)'"
        if kind == .note {
            // A note's title may hold the text itself, escaped (`%25~`).
            let literal = FileNames.nameParts(namespace: namespace, kind: kind, title: title + FileNames.marker + marker, updatedAt: zero)
            instead += ", or '\(literal.stem + literal.ext)' to keep '\(FileNames.marker)\(marker)' in its title"
        }
        throw refuse(.invalid, "\(folderPath(folder))/\(name) refused: '\(FileNames.marker)\(marker)' is the mark the mount gives a "
                     + "second file titled '\(title)', and no first file of that title is here, so every device would list it as "
                     + "'\(plain.stem + plain.ext)': \(instead)")
    }
}
