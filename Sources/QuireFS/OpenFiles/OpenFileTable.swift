import QuireCore
import QuireFuse

/// The text of one row while files on it are open: shared by every open
/// handle (so all of them see each other's writes, as on any filesystem)
/// and committed as one new version at flush.
struct WorkingCopy {
    var title: String
    var content: [UInt8]
    /// A notebook row's kind and folder (what a new row is created as).
    var kind: NoteKind = .note
    var folder: RowKey? = nil
    /// A modification time set explicitly (utimensat) since the last
    /// write, in nanoseconds; committed with the text. A write clears it.
    var setModificationTime: Int64? = nil
    var isDirty = false
    /// The text the copy held when it last was clean (loaded, or
    /// committed): what every write since landed on, and so what a file
    /// opened on it meanwhile, and not replacing it whole, is counted
    /// against (its reads would show other handles' unsaved writes, which
    /// no tombstone needs to name). Set by `willChange`.
    private(set) var cleanText: [UInt8] = []
    /// Created through the mount and never committed: no row exists yet.
    var isNew = false
    var modifiedAt: FuseTimestamp = .now
    /// The change number of the version `content` came from, as the
    /// listing showed it when loaded: what the kernel cache tracks.
    var seq: Int64 = 0
    /// The store's change number of that version, which can be ahead of
    /// the listing's for a moment (the feed applies it next round): the
    /// kernel was told the listed version's size.
    var storedSeq: Int64 = 0

    /// Why a write was refused since the copy was clean (past the size
    /// limit, or no room on the disk): the text lacks what its program meant
    /// to write (one that ignores a failed write saves a cut text), so it is
    /// never committed (`commit`).
    enum RefusedWrite { case tooLarge, noRoom }
    var refusedWrite: RefusedWrite? = nil
    /// Emptied since the copy was clean (a truncating open, a file made or
    /// made again, a truncate to 0): its save is the row's whole text, not
    /// writes onto the stored one.
    var isWrittenWhole = false

    /// Called before each change of the text: the first since the copy was
    /// clean keeps that text as `cleanText`, and the copy is dirty.
    mutating func willChange() {
        if !isDirty {
            cleanText = content
            refusedWrite = nil
            isWrittenWhole = false
        }
        isDirty = true
    }

    /// Empties the text, to be written whole (see `isWrittenWhole`).
    mutating func empty() {
        willChange()
        content = []
        isWrittenWhole = true
    }

    /// What a file opened on this copy now, not replacing it whole, writes onto.
    var textWrittenOnto: [UInt8] { isDirty ? cleanText : content }
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

        var row: RowRef? {
            if case .row(let ref) = self { return ref }
            return nil
        }
    }

    var target: Target
    var inode: UInt64
    var flags: FuseOpenFlags
    /// The exact bytes this handle was shown when it opened (or last
    /// committed). A prose merge (issue 6) computes deliberate deletions
    /// against this, never against the live row, so a sync import that lands
    /// while the file is open is not mistaken for a deletion.
    var shown: [UInt8]
    /// The process that opened it (see `ShownBaselines`); nil: unknown.
    var process: Int32? = nil
    /// Opened with direct I/O: its reads bypass the kernel's page cache,
    /// each one a request of its own.
    var isDirect = false
    /// Its text is yet to be counted as shown to its process: at its first
    /// read, not at the open (rsync opens a note it replaces and reads none of it).
    var showsAtFirstRead = false
}

/// The files open through the mount and the working copies they share.
///
/// A row's open count is the number of handles whose target is that row,
/// kept here and nowhere else: a handle's target changes only through this
/// table. (The count used to be adjusted by hand in eight places; a missed
/// one dropped a copy under an open file, whose writes then failed with
/// EBADF, or kept a dirty copy with no handle that unmount committed.)
///
/// A working copy is kept while a handle points at its row. A caller may
/// keep one for the length of a request (truncate by path, a commit before
/// an exchange) and drops it with `dropCopyIfUnheld`.
struct OpenFileTable {
    private var files: [UInt64: OpenFile] = [:]
    private var copies: [RowRef: WorkingCopy] = [:]
    private var counts: [RowRef: Int] = [:]
    private var nextHandle: UInt64 = 1

    /// How many handles are open (status).
    var count: Int { files.count }
    var copyCount: Int { copies.count }

    subscript(handle: UInt64) -> OpenFile? { files[handle] }

    func openCount(of ref: RowRef) -> Int { counts[ref] ?? 0 }

    /// Handles in the order they were opened (so results do not depend on hashing).
    func handles(where matches: (OpenFile) -> Bool) -> [UInt64] {
        files.filter { matches($0.value) }.keys.sorted()
    }

    func handles(on ref: RowRef) -> [UInt64] { handles { $0.target.row == ref } }

    func isOpen(inode: UInt64) -> Bool { files.values.contains { $0.inode == inode } }

    /// Rows whose copy no handle holds: empty between requests.
    var unheldCopies: [RowRef] { copies.keys.filter { openCount(of: $0) == 0 } }

    // MARK: Handles

    mutating func add(_ file: OpenFile) -> UInt64 {
        let handle = nextHandle
        nextHandle += 1
        files[handle] = file
        count(file.target, by: 1)
        return handle
    }

    /// Closes a handle. The caller then decides what happens to the row's
    /// copy if this was its last handle (`openCount(of:) == 0`).
    mutating func remove(_ handle: UInt64) -> OpenFile? {
        guard let file = files.removeValue(forKey: handle) else { return nil }
        count(file.target, by: -1)
        return file
    }

    /// Points a handle at another target. A row target needs its copy in
    /// the table first: a handle on a row with no copy fails its writes.
    mutating func retarget(_ handle: UInt64, to target: OpenFile.Target) {
        guard let old = files[handle] else { return }
        if let ref = target.row { precondition(copies[ref] != nil, "a handle on \(ref) with no working copy") }
        count(old.target, by: -1)
        files[handle]!.target = target
        count(target, by: 1)
    }

    mutating func setShown(_ handle: UInt64, _ bytes: [UInt8]) { files[handle]?.shown = bytes }

    /// The handle's first read counted what it was shown.
    mutating func markShown(_ handle: UInt64) { files[handle]?.showsAtFirstRead = false }

    private mutating func count(_ target: OpenFile.Target, by delta: Int) {
        guard let ref = target.row else { return }
        let value = (counts[ref] ?? 0) + delta
        counts[ref] = value > 0 ? value : nil
    }

    // MARK: Working copies

    func copy(_ ref: RowRef) -> WorkingCopy? { copies[ref] }

    /// Keeps `copy` as the row's text; the handles pointing at the row share it.
    mutating func keep(_ copy: WorkingCopy, for ref: RowRef) { copies[ref] = copy }

    /// Changes a copy where it stands, so its text is not copied (a `var`
    /// copy shares storage with the table, and each write() copied the
    /// whole text: 128 MiB of writes took 6 s, not 1).
    @discardableResult
    mutating func modifyCopy<T, E: Error>(_ ref: RowRef, _ change: (inout WorkingCopy) throws(E) -> T) throws(E) -> T? {
        guard copies[ref] != nil else { return nil }
        return try change(&copies[ref]!)
    }

    /// Drops the copy when no handle holds it; returns it if dropped.
    @discardableResult
    mutating func dropCopyIfUnheld(_ ref: RowRef) -> WorkingCopy? {
        guard openCount(of: ref) == 0 else { return nil }
        return copies.removeValue(forKey: ref)
    }

    /// The row's file was removed or replaced: its open handles keep the
    /// text they had as orphans, and the copy goes. Returns the copy.
    @discardableResult
    mutating func orphan(_ ref: RowRef) -> WorkingCopy? {
        guard let copy = copies.removeValue(forKey: ref) else { return nil }
        for handle in handles(on: ref) { retarget(handle, to: .orphan(copy.content, modifiedAt: copy.modifiedAt)) }
        return copy
    }

    /// Readers of `ref` keep the text they have read from (as orphans)
    /// when the row becomes `new`: a program reads a file in pieces, and
    /// the next piece of another version cuts a paragraph in two, which its
    /// next save would keep. Readers with direct I/O always; readers through
    /// the page cache when `new` is not the old text with more after it
    /// (nil: unknown): the kernel reads a note whole into its cache, but the
    /// read at the old end that finds the file grown is served from the new
    /// version at that offset. One that grew at its end they follow (`tail -f`).
    mutating func keepTextOfReaders(of ref: RowRef, becoming new: [UInt8]?) {
        guard let copy = copies[ref] else { return }
        let isAppend = new.map { $0.starts(with: copy.content) } ?? false
        for handle in handles(on: ref) where !files[handle]!.flags.isWritable && (files[handle]!.isDirect || !isAppend) {
            retarget(handle, to: .orphan(copy.content, modifiedAt: copy.modifiedAt))
        }
    }

    /// Copies of every dirty row (for unmount).
    var dirtyRows: [RowRef] { copies.filter { $0.value.isDirty }.keys.sorted { $0.key < $1.key } }

    // MARK: Orphans

    /// The text of a removed file that handles on `inode` still hold.
    func orphan(onInode inode: UInt64) -> (bytes: [UInt8], modifiedAt: FuseTimestamp)? {
        for handle in handles(where: { $0.inode == inode }) {
            if case .orphan(let bytes, let modifiedAt)? = files[handle]?.target { return (bytes, modifiedAt) }
        }
        return nil
    }

    /// Changes the text of a removed file: every handle open on it sees it.
    mutating func changeOrphan(_ handle: UInt64, _ change: (inout [UInt8]) throws(FuseError) -> Void) throws(FuseError) {
        guard let file = files[handle], case .orphan(var bytes, _) = file.target else { throw .badFileHandle }
        try change(&bytes)
        for other in handles(where: { $0.inode == file.inode }) + [handle] {
            if case .orphan? = files[other]?.target { files[other]!.target = .orphan(bytes, modifiedAt: .now) }
        }
    }
}

extension WorkingCopy {
    /// Takes a rename's placement (nil: not a notebook row).
    mutating func place(_ placement: Placement?) {
        guard let placement else { return }
        kind = placement.kind
        folder = placement.folder
    }

    /// Takes a stored row's kind and folder (a notebook row's place).
    mutating func place(_ content: RowContent) {
        guard case .note(let note) = content else { return }
        kind = note.kind
        folder = note.folder
    }
}
