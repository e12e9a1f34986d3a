import QuireCore

/// One thing inotify watchers of the mount are told of a change made
/// elsewhere (a sibling's edit, `quire put`).
enum WatcherNews: Hashable {
    /// A name went away: the feed unlinks it (a folder: removes it), and
    /// the mount answers that one call (and the lookup before it) as if
    /// the file were still there, removing nothing (IN_DELETE).
    /// `child` is the row's inode (never a number that may stand for
    /// another file now).
    case removed(parent: UInt64, child: UInt64, name: CanonicalName, path: String, isFolder: Bool, row: RowRef)
    /// A file's text or times changed: a chmod to the mode it has (modes
    /// never change here), which raises IN_ATTRIB.
    case changed(inode: UInt64, path: String, mode: UInt32)
    /// A file's name changed (a sibling's rename, or a key marker it
    /// gained): the feed renames it, and the mount answers that rename
    /// (and the lookups before it) as if the file still had the old name,
    /// moving nothing (IN_MOVED_FROM and IN_MOVED_TO, one cookie).
    case renamed(parent: UInt64, child: UInt64, name: CanonicalName, path: String,
                 newParent: UInt64, newName: CanonicalName, newPath: String, ref: RowRef)
    /// A name appeared: the feed opens it with O_CREAT (a folder: makes
    /// it), and the mount answers that one call with the row (IN_CREATE).
    case created(parent: UInt64, name: CanonicalName, ref: RowRef, path: String, isFolder: Bool)
}

extension WatcherNews {
    /// The order the calls are made in: a new folder before what comes
    /// into it (parents first), a folder that went after what went with it.
    static func ordered(_ news: [WatcherNews]) -> [WatcherNews] {
        func rank(_ item: WatcherNews) -> Int {
            switch item {
            case .created(_, _, _, let path, true): return -1_000_000 + path.utf8.count
            case .removed(_, _, _, let path, true, _): return 1_000_000 - path.utf8.count
            default: return 0
            }
        }
        return news.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)
    }

    /// The folder the call is made in.
    var parentPath: String {
        switch self {
        case .removed(_, _, _, let path, _, _), .changed(_, let path, _), .created(_, _, _, let path, _), .renamed(_, _, _, let path, _, _, _, _):
            Self.folderPath(of: path)
        }
    }

    /// The row a name came to or moved with.
    var ref: RowRef? {
        switch self {
        case .created(_, _, let ref, _, _), .renamed(_, _, _, _, _, _, _, let ref): ref
        case .removed, .changed: nil
        }
    }

    static func folderPath(of path: String) -> String { String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
}

/// What the change feed tells file watchers (editors, Obsidian, indexers)
/// of changes that did not pass through the kernel.
///
/// The kernel raises inotify events only for calls made through it, so a
/// sibling's edit shown in the mount raised none: an editor with the note
/// open never heard of it, and one that kept a deleted note open saved it
/// back as new. (`notify_delete` no longer raises IN_DELETE on current
/// kernels.) So the feed makes the calls itself, from its own thread, never
/// inside a request: an unlink of a name that went (before the kernel is
/// told to drop the name), a rename of a file whose name changed, a chmod
/// that changes nothing, and an O_CREAT open of a name that came (for a
/// folder: an rmdir and a mkdir, never for a folder renamed: an rmdir
/// kills its inode in the kernel, and the folder keeps that inode under its
/// new name). The mount answers the feed's thread, for that name and while
/// the call runs, as the call needs (`Announcement`), and changes nothing
/// in the store.
///
/// News is made only where a watcher can be: for a file the kernel holds
/// (it looked it up), a name in a folder it holds. A catch-up of thousands
/// of rows nobody listed costs nothing.
struct WatcherNotices {
    struct Slot: Hashable {
        var parent: UInt64
        var name: CanonicalName
    }

    /// A name the feed is calling on now.
    enum Announcement {
        /// Opened with O_CREAT: a lookup finds nothing, the create the row.
        case creating(RowRef)
        /// Unlinked (or removed, a folder): a lookup finds `child` (the
        /// inode of `row`) still, the call removes nothing.
        case removing(child: UInt64, row: RowRef, isFolder: Bool)
        /// Renamed from here: a lookup finds `child` (the inode of `row`)
        /// still, the rename moves nothing.
        case renaming(child: UInt64, row: RowRef)
        /// Renamed to here: a lookup finds nothing.
        case vacant
    }

    private var queued: [WatcherNews] = []
    /// Where each row's latest created or renamed news is in `queued`.
    private var lastOfRow: [RowRef: Int] = [:]
    private var announcing: [Slot: (what: Announcement, thread: Int32)] = [:]
    /// Names whose announcing create, mkdir or rename reached the mount
    /// (the kernel made the call).
    private var answered: Set<Slot> = []

    /// Queues `news`; a file renamed again in the same round (a folder that
    /// went moved it to the top, then its own move came) is told once,
    /// from where the watchers last saw it.
    mutating func queue(_ news: WatcherNews) {
        if case .renamed(let parent, _, let name, _, let newParent, let newName, let newPath, let ref) = news,
           let earlier = lastOfRow[ref] {
            switch queued[earlier] {
            case .created(let p, let n, _, _, false) where p == parent && n == name:
                queued[earlier] = .created(parent: newParent, name: newName, ref: ref, path: newPath, isFolder: false)
                return
            case .renamed(let p, let child, let n, let path, let np, let nn, _, _) where np == parent && nn == name:
                queued[earlier] = .renamed(parent: p, child: child, name: n, path: path, newParent: newParent, newName: newName,
                                           newPath: newPath, ref: ref)
                return
            default: break
            }
        }
        queued.append(news)
        if let ref = news.ref { lastOfRow[ref] = queued.count - 1 }
    }

    /// The queued news, each item once.
    mutating func take() -> [WatcherNews] {
        var seen = Set<WatcherNews>()
        let work = queued.filter { seen.insert($0).inserted }
        queued.removeAll()
        lastOfRow.removeAll()
        return work
    }

    mutating func begin(_ what: Announcement, _ slot: Slot, thread: Int32) { announcing[slot] = (what, thread) }

    mutating func end(_ slot: Slot) { announcing.removeValue(forKey: slot) }

    /// The mount answered the feed's create, mkdir or rename of `slot`.
    mutating func noteAnswered(_ slot: Slot) { answered.insert(slot) }

    /// Whether the feed's last call on `slot` reached the mount (else the
    /// kernel had the new name already: the open just opened, the mkdir
    /// or rename failed or did nothing, and no event was raised).
    mutating func takeAnswered(_ slot: Slot) -> Bool { answered.remove(slot) != nil }

    /// Whether `caller` is the feed's thread making one of its calls (an
    /// open it makes of a name the kernel looked up meanwhile loads nothing).
    func isCalling(_ caller: Int32) -> Bool { caller != 0 && announcing.values.contains { $0.thread == caller } }

    /// What the feed is announcing under `slot`, when the request comes
    /// from the feed's thread (anyone else sees the folder as it is).
    func announced(_ slot: Slot, to caller: Int32) -> Announcement? {
        // Asked at every lookup and create: nothing to hash while the feed calls nothing.
        guard !announcing.isEmpty, let entry = announcing[slot], entry.thread == caller, caller != 0 else { return nil }
        return entry.what
    }
}
