import Foundation
import QuireCore

/// Where open files go when a rename moves, replaces or swaps what they
/// were opened on (the rename's table changes, `RenamePlan.TableChange`).
extension QuireFileSystem {
    /// Files still open on a temp file renamed over a row name follow it:
    /// what they write later (Python flushes its buffer at close, after an
    /// os.replace inside its `with` block) went to the removed temp file.
    /// They were opened without flush, so their text is committed when the
    /// last of them is released.
    func adoptScratchHandles(of inode: UInt64, to ref: RowRef) {
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

    /// Files open on `ref` follow its inode to the scratch file
    /// `folder/name`, which holds their text (`bytes`, unsaved edits
    /// included); the row's working copy goes with them.
    func moveRowHandles(of ref: RowRef, toScratch folder: Folder, _ name: CanonicalName, bytes: [UInt8]) {
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

    /// The kernel moved `inode` (and the files open on it) to a name that
    /// now shows `ref`.
    func moveOpenFiles(of inode: UInt64, to ref: RowRef) {
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
    func swapOpenFiles(_ aInode: UInt64, _ bInode: UInt64, _ a: RowRef, _ b: RowRef) {
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
            copy.storedSeq = copy.seq
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
