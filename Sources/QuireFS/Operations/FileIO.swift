import Foundation
import Glibc
import QuireCore
import QuireFuse
import QuireStore

extension QuireFileSystem {
    /// Larger writes fail with EFBIG: one version of a row holds at most
    /// `RowLimits.maxBodyBytes` (the most that can sync to a sibling; see
    /// RowLimits for why), and the whole body lives in memory while the
    /// file is open. Removed files still open (orphans) keep the same limit.
    static let maximumFileSize = RowLimits.maxBodyBytes

    /// The sentence in the log and `.quire/status` for a refused size.
    func tooLargeMessage(_ ref: RowRef, size: Int) -> String {
        "\(rowPath(ref)): would grow to \(RowLimits.describe(size)), but a file here is at most "
            + "\(RowLimits.describe(Self.maximumFileSize)) (the most one version of a row may hold and still sync); refused with EFBIG"
    }

    public func open(_ inode: FuseInode, flags: FuseOpenFlags, request: FuseRequest) throws -> FuseOpenReply {
        if let file = controlFile(inode), !flags.isWritable {
            let bytes = renderControl(file)
            // Generated text: always read fresh (this is not a note body).
            return locked {
                FuseOpenReply(handle: openFiles.add(OpenFile(target: .control(bytes), inode: inode.rawValue, flags: flags, shown: bytes)),
                              options: [.directIO, .noFlush])
            }
        }
        return try locked { () throws(FuseError) -> FuseOpenReply in
            // An inode the kernel still names and this table dropped: its row is gone.
            guard let object = names.inodes.object(inode.rawValue) else { throw .stale }
            switch object {
            case .root, .namespace, .control:
                throw .isDirectory
            case .row(let ref) where names.isFolder(ref):
                throw .isDirectory
            case .controlFile(let file):
                if flags.isWritable { throw refuse(.permissionDenied, ".quire/\(file.name) is read-only") }
                let bytes = controlContents(file)
                // Generated text: always read fresh (this is not a note body).
                return FuseOpenReply(handle: openFiles.add(OpenFile(target: .control(bytes), inode: inode.rawValue, flags: flags, shown: bytes)),
                                     options: [.directIO, .noFlush])
            case .scratch(let folder, let name):
                let descriptor = try scratch.open(folder, name, flags: flags.rawValue & ~(O_CREAT | O_EXCL))
                // Nothing happens at close for a local file: spare the kernel the flush.
                return FuseOpenReply(handle: openFiles.add(OpenFile(target: .scratch(descriptor), inode: inode.rawValue, flags: flags, shown: [])),
                                     options: [.noFlush])
            case .row where watcherNotices.isCalling(request.pid):
                // The feed's O_CREAT open, of a name the kernel looked up meanwhile.
                return FuseOpenReply(handle: openFiles.add(OpenFile(target: .control([]), inode: inode.rawValue, flags: flags, shown: [])),
                                     options: [.directIO, .noFlush])
            case .row(let ref):
                do throws(FuseError) {
                    return try openRow(ref, inode: inode.rawValue, flags: flags, process: processGroups.process(of: request.pid))
                } catch .noEntry {
                    // Deleted since the kernel looked its name up (a sibling
                    // saved over its own file of that name): the kernel looks
                    // again, and an O_CREAT open makes the file anew.
                    unlistIfVanished(ref)
                    throw .stale
                } catch {
                    throw error
                }
            case .conflictCopy(let ref, let dot):
                return try openConflictCopy(inode.rawValue, ref, dot, flags: flags)
            case .kept(let node):
                return try openKept(node, inode: inode.rawValue, flags: flags)
            }
        }
    }

    func openRow(_ ref: RowRef, inode: UInt64, flags: FuseOpenFlags, process: Int32?) throws(FuseError) -> FuseOpenReply {
        if flags.isWritable && MountLayout.isReadOnly(ref.namespace) {
            throw refuse(.permissionDenied, "\(ref.namespace.name)/\(displayName(ref)) is read-only: memory is append-only")
        }
        var copy = try workingCopy(ref)
        let shown = shownBaseline(ref, copy, replacesWhole: flags.isTruncating && flags.isWritable, process: process)
        if flags.isTruncating && flags.isWritable && !copy.content.isEmpty {
            copy.empty()
            copy.modifiedAt = .now
        }
        openFiles.keep(copy, for: ref)
        // The kernel may hold an older version's size than this text (the
        // listing shows that version still, or the feed's word of the change
        // has not reached the kernel yet): its page cache would end a read
        // there, cutting the text, and the editor's next save would delete
        // the cut paragraphs. This file reads past it.
        let listed = names.listing(ref.namespace)?.rows[ref.key]?.seq ?? 0
        // A text opened to be read and written in place (no O_TRUNC) has
        // its save's deletions counted against the text at this open
        // (`shownBaseline`), so that is what it must read: never pages or a
        // size the kernel kept of another version. Attachments are bytes,
        // with no deletions counted (and may be mapped, which needs pages).
        let editsInPlace = flags.isReadable && flags.isWritable && !flags.isTruncating && copy.kind != .file
        let kernelIsBehind = (!copy.isDirty && copy.storedSeq > listed) || kernelCache.mayHoldOlder(inode) || editsInPlace
        // Keep the kernel's pages when they hold exactly this version.
        let keepsCache = kernelCache.opened(inode, version: copy.isDirty || kernelIsBehind ? nil : copy.seq)
        // What a reader is shown counts from its first read; the kernel
        // may answer every read of pages it keeps without asking.
        let showsNow = flags.isReadable && !copy.isDirty && !(flags.isTruncating && flags.isWritable) && keepsCache
        if showsNow { lastShown.record(ref, copy.content, process: process, version: copy.storedSeq) }
        let handle = openFiles.add(OpenFile(target: .row(ref), inode: inode, flags: flags, shown: shown, process: process,
                                            isDirect: kernelIsBehind,
                                            showsAtFirstRead: flags.isReadable && !showsNow && !(flags.isTruncating && flags.isWritable)))
        // A reader's close commits nothing: no flush round trip.
        var options: FuseOpenReply.Options = flags.isWritable ? [] : [.noFlush]
        if keepsCache { options.insert(.keepCache) }
        if kernelIsBehind { options.insert(.directIO) }
        return FuseOpenReply(handle: handle, options: options)
    }

    /// A listed row the store holds deleted: a sibling's deletion the change
    /// feed has not applied yet. Its name is taken from the listing now, so
    /// the name is free for the open or create at hand (the feed's later
    /// word of the tombstone finds nothing to do). Whether it was.
    @discardableResult
    func unlistIfVanished(_ ref: RowRef) -> Bool {
        guard openFiles.copy(ref) == nil, !names.isDetached(ref), names.pendingName(of: ref) == nil,
              case .some(.some(let row)) = try? store.row(ref.namespace, ref.key), row.content == nil else { return false }
        kernelCache.invalidate(names.unlist(ref))
        return true
    }

    /// What an open file is shown of its row: the baseline its save's
    /// paragraph deletions are counted against (issue: no word lost).
    /// A file that keeps the text (no O_TRUNC) writes onto the text as it
    /// is now, whether it can read it or not (an append, a write at an
    /// offset): that text is its baseline (less other files' unsaved
    /// writes: `WorkingCopy.textWrittenOnto`); once it reads, the text is
    /// what this device and `process` last showed of the row. One that replaces the
    /// text whole (a truncating open) was shown nothing: an editor read the
    /// note earlier, closed it, and writes it whole now, so its baseline is
    /// what its process was last shown (else the device), not the text at
    /// this open, which may hold a sibling's paragraphs that landed in
    /// between (as its deletions).
    func shownBaseline(_ ref: RowRef, _ copy: WorkingCopy, replacesWhole: Bool, process: Int32?) -> [UInt8] {
        if replacesWhole { return wholeReplacementBaseline(ref, copy, process: process) }
        return copy.textWrittenOnto
    }

    /// The baseline of a file that replaces its row's text whole without
    /// having read it (see `shownBaseline`).
    func wholeReplacementBaseline(_ ref: RowRef, _ copy: WorkingCopy, process: Int32?) -> [UInt8] {
        lastShown.baseline(ref, process: process) ?? unkeptBaseline(ref, version: copy.storedSeq) ?? copy.content
    }

    /// The baseline of a save with no shown text kept for it (evicted, or
    /// never read here): nil (the stored text) when the stored version is
    /// one this device showed; else, for prose, nothing, so the save deletes
    /// none of a sibling's paragraphs nobody here was shown (a resurrected
    /// paragraph is an annoyance, a lost one a failure).
    func unkeptBaseline(_ ref: RowRef, version: Int64) -> [UInt8]? {
        guard ref.namespace == .notebook || ref.namespace == .saga, !lastShown.showed(ref, version: version) else { return nil }
        return []
    }

    public func read(_ inode: FuseInode, handle: UInt64, offset: UInt64, size: Int, request: FuseRequest) throws -> [UInt8] {
        try locked { () throws(FuseError) -> [UInt8] in
            guard let file = openFiles[handle] else { throw .badFileHandle }
            func slice(_ bytes: [UInt8]) -> [UInt8] {
                guard offset < UInt64(bytes.count) else { return [] }
                let start = Int(offset)
                return Array(bytes[start..<min(bytes.count, start + size)])
            }
            switch file.target {
            case .row(let ref):
                guard let copy = openFiles.copy(ref) else { return [] }
                if file.showsAtFirstRead {
                    if !copy.isDirty { lastShown.record(ref, copy.content, process: file.process, version: copy.storedSeq) }
                    openFiles.markShown(handle)
                }
                return slice(copy.content)
            case .control(let bytes), .orphan(let bytes, _): return slice(bytes)
            case .scratch(let descriptor): return try scratch.read(descriptor, offset: offset, size: size)
            }
        }
    }

    public func write(_ inode: FuseInode, handle: UInt64, offset: UInt64, data: [UInt8],
                      flags: FuseOpenFlags, request: FuseRequest) throws -> Int {
        try locked { () throws(FuseError) -> Int in
            guard let file = openFiles[handle], file.flags.isWritable else { throw .badFileHandle }
            switch file.target {
            case .control: throw .badFileHandle
            case .orphan:
                try openFiles.changeOrphan(handle) { (bytes: inout [UInt8]) throws(FuseError) in
                    let start = file.flags.isAppending ? bytes.count : Int(clamping: offset)
                    guard start + data.count <= Self.maximumFileSize else { throw .fileTooLarge }
                    if start > bytes.count { bytes += [UInt8](repeating: 0, count: start - bytes.count) }
                    bytes.replaceSubrange(start..<min(bytes.count, start + data.count), with: data)
                }
                return data.count
            case .scratch(let descriptor): return try scratch.write(descriptor, offset: offset, data: data)
            case .row(let ref):
                guard let count = openFiles.copy(ref)?.content.count else { throw .badFileHandle }
                let start = file.flags.isAppending ? count : Int(clamping: offset)
                // An append is sent at the offset where the kernel believes
                // the file ends, and the kernel puts its bytes there in its
                // own pages. Elsewhere than where the text ends (the kernel
                // still holds an older version's size), its size and pages
                // no longer match the text, and being our own write will not
                // make the change feed drop them: they go now, or a reader
                // shown the kernel's pages would save a cut text.
                if file.flags.isAppending, Int(clamping: offset) != count {
                    kernelCache.invalidateInodes(names.inodes.inodesOfRow[ref] ?? [inode.rawValue])
                }
                guard start + data.count <= Self.maximumFileSize else {
                    openFiles.modifyCopy(ref) { (copy: inout WorkingCopy) in if copy.isDirty { copy.refusedWrite = .tooLarge } }
                    throw refuse(.fileTooLarge, tooLargeMessage(ref, size: start + data.count))
                }
                guard diskRoom.hasRoom(forText: max(count, start + data.count)) else {
                    openFiles.modifyCopy(ref) { (copy: inout WorkingCopy) in if copy.isDirty { copy.refusedWrite = .noRoom } }
                    throw refuse(.noSpace, "a write to \(rowPath(ref)) was refused: the disk holding this device is full "
                                 + "(ENOSPC); the stored text is left as it was", kind: "disk full")
                }
                // Changed in place in the table (`modifyCopy` says why).
                openFiles.modifyCopy(ref) { (copy: inout WorkingCopy) in
                    copy.willChange()
                    if start > copy.content.count { copy.content += [UInt8](repeating: 0, count: start - copy.content.count) }
                    let end = min(copy.content.count, start + data.count)
                    copy.content.replaceSubrange(start..<end, with: data)
                    copy.modifiedAt = .now
                    copy.setModificationTime = nil
                }
                return data.count
            }
        }
    }

    /// close(2): the open file's writes become one new version here, so a
    /// failure (unparsable text, disk full) is what close() returns.
    public func flush(_ inode: FuseInode, handle: UInt64, request: FuseRequest) throws {
        try locked { () throws(FuseError) in
            guard let file = openFiles[handle] else { throw .badFileHandle }
            guard case .row(let ref) = file.target else { return }
            if Self.waitsForText(openFiles.copy(ref)) { return }
            try commit(ref, shown: file.shown, process: file.process)
            openFiles.setShown(handle, openFiles.copy(ref)?.content ?? [])
        }
    }

    /// A row emptied and not written to yet, at a close that may not be the
    /// last (`printf … > note.md`: the shell's redirection closes its first
    /// descriptor before the text is written through the second). Saved
    /// now, the empty text would delete every paragraph of a note
    /// (tombstones that sync, and win over the same paragraphs when the text
    /// comes back), or make a card a stub that the text then lands on; so it
    /// is saved at the last close (release) if nothing is written by then.
    static func waitsForText(_ copy: WorkingCopy?) -> Bool {
        guard let copy else { return false }
        return copy.isDirty && copy.content.isEmpty
    }

    /// fsync(2): committed and fsynced (`store.sync()`), so it survives a power cut too.
    /// The commit happens under the lock; the wait for the disk does not
    /// (it makes durable only what is committed already, and editors fsync
    /// every save: the whole mount used to wait for each one).
    public func synchronize(_ inode: FuseInode, handle: UInt64, dataOnly: Bool, request: FuseRequest) throws {
        enum Durable { case nothing, scratch(Int32), replica(name: String) }
        let durable = try locked { () throws(FuseError) -> Durable in
            guard let file = openFiles[handle] else { throw .badFileHandle }
            switch file.target {
            case .scratch(let descriptor):
                // A copy of the descriptor: a rename may close the handle's
                // own one meanwhile, and its number be reused by another file.
                let copy = dup(descriptor)
                if copy < 0 { throw FuseError(errno) }
                return .scratch(copy)
            case .control, .orphan:
                return .nothing
            case .row(let ref):
                try commit(ref, shown: file.shown, process: file.process)
                openFiles.setShown(handle, openFiles.copy(ref)?.content ?? [])
                return .replica(name: "\(ref.namespace.name)/\(displayName(ref))")
            }
        }
        switch durable {
        case .nothing: return
        case .scratch(let descriptor):
            defer { close(descriptor) }
            if fsync(descriptor) != 0 { throw FuseError(errno) }
        case .replica(let name):
            do { try store.sync() } catch { throw storeFailure(error, doing: "make \(name) durable") }
        }
    }

    public func release(_ inode: FuseInode, handle: UInt64, flags: FuseOpenFlags, request: FuseRequest) throws {
        locked {
            guard let file = openFiles.remove(handle) else { return }
            switch file.target {
            case .scratch(let descriptor):
                close(descriptor)
                if case .scratch(let folder, let name)? = names.inodes.object(file.inode) {
                    scratchChanged(name)
                    provisional.closed(ScratchPlace(folder: folder, name: name), at: Date())
                }
            case .control, .orphan: break
            case .row(let ref): releaseWorkingCopy(ref, process: file.process, wrote: file.flags.isWritable)
            }
            dropIfForgotten(file.inode)
        }
    }

    public func setAttributes(_ inode: FuseInode, _ changes: FuseAttributeChanges, handle: UInt64?,
                              request: FuseRequest) throws -> FuseAttributeReply {
        try locked { () throws(FuseError) -> FuseAttributeReply in
            guard let object = names.inodes.object(inode.rawValue) else { throw .noEntry }
            if let handle, case .orphan? = openFiles[handle]?.target {
                // ftruncate of a removed file: never the row that now has its name.
                if changes.fields.contains(.size) {
                    let size = Int(clamping: changes.size)
                    guard size <= Self.maximumFileSize else { throw .fileTooLarge }
                    try openFiles.changeOrphan(handle) { (bytes: inout [UInt8]) throws(FuseError) in
                        if size < bytes.count { bytes.removeSubrange(size...) } else { bytes += [UInt8](repeating: 0, count: size - bytes.count) }
                    }
                }
                return FuseAttributeReply(try attributes(inode.rawValue), timeout: configuration.cacheTimeout)
            }
            switch object {
            case .row(let ref) where changes.fields.contains(.size):
                if MountLayout.isReadOnly(ref.namespace) {
                    throw refuse(.permissionDenied, "\(ref.namespace.name)/\(displayName(ref)) is read-only")
                }
                let process = processGroups.process(of: request.pid)
                if let handle, let file = openFiles[handle], changes.size == 0, !file.flags.isReadable, let copy = openFiles.copy(ref) {
                    // Emptied to be written whole (open for writing, then
                    // ftruncate): as an O_TRUNC open, see `shownBaseline`.
                    openFiles.setShown(handle, wholeReplacementBaseline(ref, copy, process: process))
                }
                try resize(ref, to: Int(clamping: changes.size), byHandle: handle.flatMap { openFiles[$0] } != nil, process: process)
            case .scratch(let folder, let name):
                try changeScratch(folder, name, changes, handle: handle)
            case .controlFile where changes.fields.contains(.size):
                throw .permissionDenied
            case .kept(let node):
                throw refuseKeptChange(node, "setattr")
            default:
                break
            }
            if case .row(let ref) = object, changes.fields.contains(.modificationTime), !MountLayout.isReadOnly(ref.namespace) {
                try setModificationTime(ref, changes.modificationTime)
            }
            // Rows have fixed permissions and owner (chmod and chown change
            // nothing); access times are not kept.
            return FuseAttributeReply(try attributes(inode.rawValue), timeout: configuration.cacheTimeout)
        }
    }

    /// utimensat on a row: the time is the file's mtime from now on, on
    /// every device, until the next write. With unsaved text open, it is
    /// committed with it (cp -p and tar set times before they close);
    /// otherwise it is an edit of its own.
    private func setModificationTime(_ ref: RowRef, _ time: FuseTimestamp) throws(FuseError) {
        if var copy = openFiles.copy(ref), copy.isDirty || copy.isNew {
            copy.setModificationTime = time.totalNanoseconds
            openFiles.keep(copy, for: ref)
            return
        }
        guard let stored = try? store.row(ref.namespace, ref.key)?.content, case .note(var note) = stored else { return }
        guard note.modifiedAt != time.totalNanoseconds else { return }
        guard note.body != nil else {
            throw refuse(.io, "\(rowPath(ref)): its body is offloaded; open it once (to bring it back) before setting its time")
        }
        note.modifiedAt = time.totalNanoseconds
        do { recordWrite(ref, try store.putFromMount(.note(note), key: ref.key)) } catch {
            throw storeFailure(error, doing: "set the time of \(rowPath(ref))")
        }
        kernelCache.invalidateInodes(names.inodes.inodesOfRow[ref] ?? [])
    }

    /// ftruncate on an open file changes its working copy (committed at
    /// close); truncate(2) by path is a complete edit of its own.
    private func resize(_ ref: RowRef, to size: Int, byHandle: Bool, process: Int32?) throws(FuseError) {
        guard size <= Self.maximumFileSize else { throw refuse(.fileTooLarge, tooLargeMessage(ref, size: size)) }
        var copy = try workingCopy(ref)
        if size == copy.content.count { return }
        // An open file's new size is saved at its close, and an emptied one
        // at its last (`waitsForText`), whose failure no program hears of:
        // on a disk with no room to save it, the ftruncate fails now, as a
        // write does (`truncate -s 0` reported success, and the file came
        // back at its old size).
        if byHandle, !diskRoom.hasRoom(forText: size) {
            throw refuse(.noSpace, "\(rowPath(ref)) was not resized: the disk holding this device is full (ENOSPC); "
                         + "the stored text is left as it was", kind: "disk full")
        }
        if size == 0 { copy.empty() } else { copy.willChange() }
        if size < copy.content.count {
            copy.content.removeSubrange(size...)
        } else {
            copy.content += [UInt8](repeating: 0, count: size - copy.content.count)
        }
        copy.modifiedAt = .now
        copy.setModificationTime = nil
        openFiles.keep(copy, for: ref)
        if !byHandle {
            // Not kept when the commit fails either: no handle would ever release it.
            defer { openFiles.dropCopyIfUnheld(ref) }
            try commit(ref, shown: nil, process: process)
        }
    }

    private func changeScratch(_ folder: Folder, _ name: CanonicalName, _ changes: FuseAttributeChanges, handle: UInt64?) throws(FuseError) {
        let path = scratch.path(folder, name)
        if changes.fields.contains(.size), truncate(path, off_t(clamping: changes.size)) != 0 { throw FuseError(errno) }
        if changes.fields.contains(.mode), chmod(path, mode_t(changes.permissions)) != 0 { throw FuseError(errno) }
        if changes.fields.contains(.accessTime) || changes.fields.contains(.modificationTime) {
            let omit = timespec(tv_sec: 0, tv_nsec: Int((1 << 30) - 2))   // UTIME_OMIT
            var times = [
                changes.fields.contains(.accessTime)
                    ? timespec(tv_sec: time_t(changes.accessTime.seconds), tv_nsec: Int(changes.accessTime.nanoseconds)) : omit,
                changes.fields.contains(.modificationTime)
                    ? timespec(tv_sec: time_t(changes.modificationTime.seconds), tv_nsec: Int(changes.modificationTime.nanoseconds)) : omit,
            ]
            if utimensat(AT_FDCWD, path, &times, 0) != 0 { throw FuseError(errno) }
        }
    }
}
