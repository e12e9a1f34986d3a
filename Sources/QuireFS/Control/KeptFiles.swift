import QuireCore
import QuireFuse
import QuireStore

/// A node of `.quire/trash/` or `.quire/versions/`.
enum KeptNode: Hashable, Sendable {
    /// A folder (path empty: the tree's top, `.quire/trash` itself).
    case folder(KeptFolder)
    /// One kept text. The place is part of it: an undelete moves a text
    /// from the trash to the versions, and the trash's inode must go.
    case file(KeptPlace, Int64)

    static let trashInode: UInt64 = 32
    static let versionsInode: UInt64 = 33
    /// Files: derived from the kept text's id (never reused), so a number
    /// is the same text for as long as anyone holds it. Folders: handed out
    /// in order, per mount. Both ranges are below 2^63, above the dynamic
    /// numbers InodeTable hands out from 2^62 (which never get this far),
    /// and away from the rows' derived numbers in [2^40, 2^62).
    static let fileBase: UInt64 = 0x6000_0000_0000_0000
    static let folderBase: UInt64 = 0x7000_0000_0000_0000

    /// The two tops, with their fixed numbers (InodeTable registers them).
    static let fixed: [(inode: UInt64, node: KeptNode)] = [
        (trashInode, .folder(KeptFolder(place: .trash, path: []))),
        (versionsInode, .folder(KeptFolder(place: .versions, path: []))),
    ]

    static func fileInode(_ place: KeptPlace, _ id: Int64) -> UInt64 {
        fileBase + UInt64(id) * 2 + (place == .versions ? 1 : 0)
    }
}

/// The mount's side of the kept trees: the layout last built (rebuilt when
/// the store's change number moves, which every write of the kept table
/// does) and the numbers given to folders.
struct KeptViews {
    var layout: KeptLayout?
    var layoutSequence: Int64 = -1
    var folderInodes: [KeptFolder: UInt64] = [:]
    var nextFolderInode = KeptNode.folderBase
    /// The kernel may cache these names and attributes only briefly: an
    /// undelete or a new deletion changes which name shows which text.
    static let cacheTimeout = 1.0
}

/// `.quire/trash/` and `.quire/versions/`: read-only views of the texts the
/// store keeps (`KeptLayout` names them). Every call here is made with the
/// lock held, from the hooks in Directories.swift, FileIO.swift and
/// QuireFileSystem.swift.
extension QuireFileSystem {
    func keptLayout() throws(FuseError) -> KeptLayout {
        do {
            let sequence = try store.changeSequence()
            if let layout = kept.layout, kept.layoutSequence == sequence { return layout }
            let layout = KeptLayout(try store.keptVersions())
            kept.layout = layout
            kept.layoutSequence = sequence
            return layout
        } catch {
            throw storeFailure(error, doing: "list .quire/trash and .quire/versions")
        }
    }

    /// The number of a node, bound in the inode table (a lookup's).
    func keptInode(_ node: KeptNode) -> UInt64 {
        let inode: UInt64
        switch node {
        case .file(let place, let id): inode = KeptNode.fileInode(place, id)
        case .folder(let folder) where folder.path.isEmpty: return folder.place == .trash ? KeptNode.trashInode : KeptNode.versionsInode
        case .folder(let folder): inode = listedKeptInode(folder)
        }
        if names.inodes.object(inode) != .kept(node) { names.inodes.bindKept(inode, node) }
        return inode
    }

    /// A folder's number for a listing, without binding it.
    private func listedKeptInode(_ folder: KeptFolder) -> UInt64 {
        if folder.path.isEmpty { return folder.place == .trash ? KeptNode.trashInode : KeptNode.versionsInode }
        if let inode = kept.folderInodes[folder] { return inode }
        kept.nextFolderInode += 1
        kept.folderInodes[folder] = kept.nextFolderInode
        return kept.nextFolderInode
    }

    /// `trash` and `versions` in `.quire`.
    func keptTopEntries() -> [DirectoryEntry] {
        [DirectoryEntry(name: KeptPlace.trash.rawValue, inode: KeptNode.trashInode, kind: .directory),
         DirectoryEntry(name: KeptPlace.versions.rawValue, inode: KeptNode.versionsInode, kind: .directory)]
    }

    func keptTop(named name: CanonicalName) -> KeptNode? {
        KeptPlace.allCases.first { CanonicalName($0.rawValue) == name }.map { .folder(KeptFolder(place: $0, path: [])) }
    }

    func keptEntry(_ node: KeptNode) throws(FuseError) -> FuseEntry {
        let inode = keptInode(node)
        return FuseEntry(try keptAttributes(node, inode: inode), attributeTimeout: KeptViews.cacheTimeout, entryTimeout: KeptViews.cacheTimeout)
    }

    func lookUpKept(_ name: CanonicalName, in node: KeptNode) throws(FuseError) -> FuseEntry {
        guard case .folder(let folder) = node else { throw .notDirectory }
        guard let directory = try keptLayout().directory(folder) else { throw .noEntry }
        if directory.folders.contains(name) { return try keptEntry(.folder(KeptFolder(place: folder.place, path: folder.path + [name]))) }
        guard let id = directory.files[name] else { throw .noEntry }
        return try keptEntry(.file(folder.place, id))
    }

    func keptEntries(_ node: KeptNode) throws(FuseError) -> [DirectoryEntry] {
        guard case .folder(let folder) = node else { throw .notDirectory }
        let parent = folder.path.isEmpty ? InodeTable.controlDirectory
            : listedKeptInode(KeptFolder(place: folder.place, path: folder.path.dropLast()))
        var entries = [DirectoryEntry(name: "..", inode: parent, kind: .directory)]
        for (name, id) in try keptLayout().entries(folder) {
            let child: KeptNode = id.map { .file(folder.place, $0) } ?? .folder(KeptFolder(place: folder.place, path: folder.path + [name]))
            let inode: UInt64
            switch child {
            case .file(let place, let id): inode = KeptNode.fileInode(place, id)
            case .folder(let sub): inode = listedKeptInode(sub)
            }
            entries.append(DirectoryEntry(name: name.text, inode: inode, kind: id == nil ? .directory : .regular, object: .kept(child)))
        }
        return entries
    }

    func keptAttributes(_ node: KeptNode, inode: UInt64) throws(FuseError) -> FuseAttributes {
        switch node {
        case .folder(let folder):
            let exists = folder.path.isEmpty ? true : try keptLayout().directory(folder) != nil
            guard exists else { throw .noEntry }
            return directoryAttributes(inode, writable: false)
        case .file(let place, let id):
            guard let version = try keptLayout().versions[id], version.place == place else { throw .noEntry }
            let written = version.modifiedAt.map(FuseTimestamp.init(nanoseconds:)) ?? FuseTimestamp(seconds: version.writtenAt.seconds)
            return FuseAttributes(inode: FuseInode(inode), kind: .regular, permissions: 0o444, uid: owner.uid, gid: owner.gid,
                                  size: UInt64(version.size), accessTime: written, modificationTime: written,
                                  changeTime: FuseTimestamp(seconds: version.keptAt.seconds))
        }
    }

    /// Reading only: the bytes are read once, checked against their hash,
    /// and served from the handle (they never change under a number).
    func openKept(_ node: KeptNode, inode: UInt64, flags: FuseOpenFlags) throws(FuseError) -> FuseOpenReply {
        guard case .file(let place, let id) = node else { throw .isDirectory }
        let path = try keptLayout().paths[id] ?? "\(place.rawValue)/…"
        if flags.isWritable || flags.isTruncating {
            throw refuse(.readOnly, ".quire/\(path) is read-only (a kept text); 'quire undelete .quire/\(path)' brings it back")
        }
        let bytes: [UInt8]
        do { bytes = try store.keptBytes(id) } catch { throw storeFailure(error, doing: "read .quire/\(path)") }
        return FuseOpenReply(handle: openFiles.add(OpenFile(target: .control(bytes), inode: inode, flags: flags, shown: [])),
                             options: [.keepCache, .noFlush])
    }

    /// Every change in the kept trees is refused, with a line in the log.
    func refuseKeptChange(_ node: KeptNode, _ what: String) -> FuseError {
        let path: String
        switch node {
        case .folder(let folder): path = ([".quire", folder.place.rawValue] + folder.path.map(\.text)).joined(separator: "/")
        case .file(let place, let id): path = ".quire/" + (kept.layout?.paths[id] ?? place.rawValue)
        }
        return refuse(.readOnly, "\(what) in \(path) refused: trash and versions are read-only ('quire undelete PATH' brings a text back)")
    }
}
