import Glibc
import QuireCore
import QuireFuse

extension QuireFileSystem {
    /// What `name` stands for in a folder. Every form of a name resolves
    /// alike: the lookups below are by `CanonicalName`.
    func resolve(_ name: CanonicalName, in folder: Folder) throws(FuseError) -> ResolvedName {
        guard let namespace = folder.namespace else {
            return scratch.status(.root, name) != nil ? .scratch(.root, name) : .none
        }
        switch FileNames.meaning(of: name, in: namespace) {
        case .junk, .localOnly:
            // A hidden folder (`.obsidian`) is a row with a junk-like name.
            if namespace == .notebook, FileNames.folderTitle(name) != nil {
                _ = try listing(namespace)
                if let found = names.resolveRow(name, title: name.text, kind: .folder, in: folder), found != .none { return found }
            }
            return scratch.status(folder, name) != nil ? .scratch(folder, name) : .none
        case .row(let title, let kind):
            _ = try listing(namespace)
            if let found = names.resolveRow(name, title: title, kind: kind, in: folder), found != .none { return found }
            // A folder whose name reads as a file name (`Projects.2026`).
            if namespace == .notebook, kind != .folder,
               let found = names.resolveRow(name, title: name.text, kind: .folder, in: folder), found != .none {
                return found
            }
            // A name a .quireignore rule keeps here (a row that synced before
            // the rule still shows, above), or a temp file's, waiting.
            if scratch.status(folder, name) != nil, FileNames.tempName(name.text) != nil || isIgnored(name, in: folder) {
                return .scratch(folder, name)
            }
            return .none
        }
    }

    func inode(of resolved: ResolvedName) -> UInt64? {
        switch resolved {
        case .row(let ref): return names.inodes.inode(for: ref)
        case .scratch(let folder, let name): return names.inodes.inode(forScratch: folder, name)
        case .none: return nil
        }
    }

    /// The folder an inode is, or ENOTDIR (ENOENT: a folder deleted
    /// meanwhile, which a shell inside it still names).
    func folder(_ inode: UInt64) throws(FuseError) -> Folder {
        switch names.inodes.object(inode) {
        case .root?: return .root
        case .namespace(let namespace)?: return .namespace(namespace)
        case .row(let ref)? where names.isFolder(ref) && !names.isDetached(ref): return .subfolder(ref.key)
        case .row(let ref)? where (try? listing(ref.namespace))?.rows[ref.key] == nil && openFiles.copy(ref) == nil: throw .noEntry
        case .scratch(_, let name)? where name.text.hasPrefix("\u{0}"): throw .noEntry
        case .control?: throw .permissionDenied
        case .kept(let node)?: throw refuseKeptChange(node, "a change")
        case nil: throw .noEntry
        default: throw .notDirectory
        }
    }

    public func lookup(parent: FuseInode, name typed: String, request: FuseRequest) throws -> FuseEntry {
        let name = CanonicalName(typed)
        var caughtUp = false
        while true {
            let found = try locked { () throws(FuseError) -> FuseEntry? in
                // The change feed telling watchers of a name that came or went (WatcherNotices).
                switch watcherNotices.announced(.init(parent: parent.rawValue, name: name), to: request.pid) {
                case .creating?, .vacant?: throw .noEntry
                case .removing(let child, let row, let isFolder)?:
                    return try announcedEntry(child, of: row, isFolder: isFolder)
                case .renaming(let child, let row)?:
                    return try announcedEntry(child, of: row, isFolder: false)
                case nil:
                    do throws(FuseError) {
                        return spelled(typed, name, try lookUp(name, in: parent.rawValue))
                    } catch .noEntry where !caughtUp && namesARow(name, in: parent.rawValue) {
                        return nil
                    } catch {
                        throw error
                    }
                }
            }
            if let found { return found }
            caughtUp = true
            guard catchUpWithStore() else { throw FuseError.noEntry }
        }
    }

    /// Whether `name` in that folder would be a stored row's (not editor
    /// junk or a temp file's, which never come from the store): only such a
    /// miss is worth catching up with the store for.
    private func namesARow(_ name: CanonicalName, in parent: UInt64) -> Bool {
        guard let namespace = (try? folder(parent))?.namespace else { return false }
        if case .row = FileNames.meaning(of: name, in: namespace) { return FileNames.tempName(name.text) == nil }
        return false
    }

    /// What the feed's own lookup of a name it is telling watchers of
    /// answers: `child`, the inode of `row`, with its attributes as they
    /// are. The kernel applies them to the inode it holds: a size of 0
    /// there made a reader racing the feed read an empty file. A number
    /// that stands for something else by now is not the file the news is
    /// about, and the kernel must not unlink or move that one.
    private func announcedEntry(_ child: UInt64, of row: RowRef, isFolder: Bool) throws(FuseError) -> FuseEntry {
        guard names.inodes.object(child) == .row(row) else { throw .noEntry }
        let attributes = (try? attributes(child)) ?? (isFolder ? directoryAttributes(child, writable: true, nested: true)
            : FuseAttributes(inode: FuseInode(child), kind: .regular, permissions: 0o644, uid: owner.uid, gid: owner.gid))
        return FuseEntry(attributes, attributeTimeout: 0, entryTimeout: 0)
    }

    func lookUp(_ name: CanonicalName, in parent: UInt64) throws(FuseError) -> FuseEntry {
        // No name here is longer (the kernel checks only its own limit).
        guard name.text.utf8.count <= FileNames.maximumNameBytes else { throw .nameTooLong }
        switch names.inodes.object(parent) {
        case .root?:
            if let namespace = MountLayout.namespace(named: name) { return try entry(InodeTable.folderInode(namespace)) }
            if name == CanonicalName(MountLayout.controlFolderName) { return try entry(InodeTable.controlDirectory) }
            guard scratch.status(.root, name) != nil else { throw .noEntry }
            return try entry(names.inodes.inode(forScratch: .root, name))
        case .namespace?, .row?:
            let folder = try folder(parent)
            guard let inode = inode(of: try resolve(name, in: folder)) else {
                guard let copy = conflictCopy(named: name, in: folder) else { throw .noEntry }
                return try entry(names.inodes.inode(forConflict: copy.ref, copy.dot))
            }
            return try entry(inode)
        case .control?:
            if let node = keptTop(named: name) { return try keptEntry(node) }
            guard let file = ControlFile.allCases.first(where: { CanonicalName($0.name) == name }) else { throw .noEntry }
            return try entry(InodeTable.controlFileInode(file))
        case .kept(let node)?: return try lookUpKept(name, in: node)
        case nil: throw .noEntry
        default: throw .notDirectory
        }
    }

    /// The reply for a name typed in another form than NFC: the kernel is
    /// told not to cache it (entry timeout 0), so it asks again at each use.
    /// A change made through one form then never leaves another form's
    /// cached entry showing a file that moved or went away; the NFC form's
    /// entry is dropped by name (`entry` invalidations) like any other.
    func spelled(_ typed: String, _ name: CanonicalName, _ entry: FuseEntry) -> FuseEntry {
        guard !typed.utf8.elementsEqual(name.text.utf8) else { return entry }
        var uncached = entry
        uncached.entryTimeout = 0
        return uncached
    }

    /// After an unlink or rename through `typed`: when that was not the NFC
    /// form, the kernel may still cache the NFC form's entry (looked up
    /// before): drop it.
    func forgetCanonicalForm(of typed: String, _ name: CanonicalName, in parent: UInt64) {
        if !typed.utf8.elementsEqual(name.text.utf8) { kernelCache.invalidate(.entry(parent: parent, name: name)) }
    }

    public func getAttributes(_ inode: FuseInode, handle: UInt64?, request: FuseRequest) throws -> FuseAttributeReply {
        if let file = controlFile(inode) {
            // Readers trust st_size, so the size is the text's, rendered now (outside the lock).
            let size = renderControl(file).count
            return FuseAttributeReply(FuseAttributes(inode: inode, kind: .regular, permissions: 0o444, uid: owner.uid, gid: owner.gid,
                                                     size: UInt64(size), accessTime: .now, modificationTime: .now, changeTime: .now),
                                      timeout: configuration.cacheTimeout)
        }
        return try locked { () throws(FuseError) -> FuseAttributeReply in
            FuseAttributeReply(try attributes(inode.rawValue), timeout: configuration.cacheTimeout)
        }
    }

    /// Asked for access(2) and chdir when the kernel does not check the
    /// permission bits itself (a mount only its owner can reach: see
    /// `MountDaemon`); the answer is the one those bits give.
    public func access(_ inode: FuseInode, mask: FuseAccessMask, request: FuseRequest) throws {
        let attributes = try getAttributes(inode, handle: nil, request: request).attributes
        guard attributes.permits(mask, for: request) else { throw FuseError.permissionDenied }
    }

    public func statistics(_ inode: FuseInode, request: FuseRequest) throws -> FuseFilesystemStatistics {
        // The space of the disk that holds the replica, which is where notes go.
        var info = statvfs()
        guard statvfs(configuration.scratchPath, &info) == 0 else { return FuseFilesystemStatistics() }
        return FuseFilesystemStatistics(blockSize: UInt64(info.f_bsize), fragmentSize: UInt64(info.f_frsize),
                                        blocks: UInt64(info.f_blocks), freeBlocks: UInt64(info.f_bfree),
                                        availableBlocks: UInt64(info.f_bavail), files: UInt64(info.f_files),
                                        freeFiles: UInt64(info.f_ffree), maximumNameLength: UInt64(FileNames.maximumNameBytes))
    }

    // MARK: Listing folders

    public func openDirectory(_ inode: FuseInode, flags: FuseOpenFlags, request: FuseRequest) throws -> FuseOpenReply {
        // A listing shows what another process stored a moment ago (`ls`
        // right after `quire put`), as a lookup finds it.
        _ = catchUpWithStore()
        return try locked { () throws(FuseError) -> FuseOpenReply in
            let entries = try directoryEntries(inode.rawValue)
            let handle = nextDirectoryHandle
            nextDirectoryHandle += 1
            directorySnapshots[handle] = entries
            // No readdir cache: a cached listing comes without attributes
            // (readdirplus), which makes `ls -l` look up every name again.
            return FuseOpenReply(handle: handle)
        }
    }

    /// Does, right after mounting, what the first listing would otherwise
    /// pay for: each folder's names and inode numbers, and a first
    /// rendering of the control files (which loads Foundation's locale
    /// data once; their sizes are rendered afresh for every stat, since
    /// readers trust st_size). One step per turn of the lock, so a request
    /// arriving meanwhile waits for one step at most.
    public func prepare() {
        for namespace in MountLayout.namespaces {
            locked { _ = try? directoryEntries(InodeTable.folderInode(namespace)) }
        }
        for file in ControlFile.allCases { _ = renderControl(file) }
    }

    private func directoryEntries(_ inode: UInt64) throws(FuseError) -> [DirectoryEntry] {
        var entries = [DirectoryEntry(name: ".", inode: inode, kind: .directory)]
        switch names.inodes.object(inode) {
        case .root?:
            entries.append(DirectoryEntry(name: "..", inode: FuseInode.root.rawValue, kind: .directory))
            entries += MountLayout.namespaces.map { DirectoryEntry(name: $0.name, inode: InodeTable.folderInode($0), kind: .directory) }
            entries.append(DirectoryEntry(name: MountLayout.controlFolderName, inode: InodeTable.controlDirectory, kind: .directory))
            entries += scratch.names(.root).map {
                DirectoryEntry(name: $0.text, inode: names.inodes.inode(forScratch: .root, $0), kind: .regular, object: .scratch(.root, $0))
            }
        case .namespace?, .row?:
            let folder = try folder(inode)
            guard let namespace = folder.namespace else { throw .notDirectory }
            let parent: UInt64
            if case .subfolder(let key) = folder {
                parent = names.directoryInode(names.folder(of: RowRef(namespace: .notebook, key: key)))
            } else {
                parent = FuseInode.root.rawValue
            }
            entries.append(DirectoryEntry(name: "..", inode: parent, kind: .directory))
            var listing = try listing(namespace)
            for name in listing.sortedNames(in: folder.folderKey) {
                let key = listing.key(named: name, in: folder.folderKey)!
                let ref = RowRef(namespace: namespace, key: key)
                if names.isDetached(ref) { continue }
                entries.append(DirectoryEntry(name: name.text, inode: names.inodes.listedInode(of: ref),
                                              kind: listing.isFolder(key) ? .directory : .regular, object: .row(ref)))
            }
            names.install(listing)   // keeps the sorted names it built
            for (name, ref) in names.pendingEntries(folder) {
                entries.append(DirectoryEntry(name: name.text, inode: names.inodes.listedInode(of: ref), kind: .regular, object: .row(ref)))
            }
            for copy in conflictCopies(in: folder) {
                entries.append(DirectoryEntry(name: copy.name.text, inode: names.inodes.inode(forConflict: copy.ref, copy.dot), kind: .regular,
                                              object: .conflictCopy(copy.ref, copy.dot)))
            }
            entries += scratch.names(folder).map {
                DirectoryEntry(name: $0.text, inode: names.inodes.inode(forScratch: folder, $0), kind: .regular, object: .scratch(folder, $0))
            }
        case .control?:
            entries.append(DirectoryEntry(name: "..", inode: FuseInode.root.rawValue, kind: .directory))
            entries += ControlFile.allCases.map { DirectoryEntry(name: $0.name, inode: InodeTable.controlFileInode($0), kind: .regular) }
            entries += keptTopEntries()
        case .kept(let node)?: entries += try keptEntries(node)
        case nil: throw .noEntry
        default:
            _ = try folder(inode)   // ENOENT for a folder deleted meanwhile
            throw .notDirectory
        }
        return entries
    }

    public func readDirectory(_ inode: FuseInode, handle: UInt64, offset: UInt64,
                              into buffer: inout FuseDirectoryBuffer, request: FuseRequest) throws {
        let entries = locked { directorySnapshots[handle] ?? [] }
        var index = Int(offset)
        while index < entries.count {
            let item = entries[index]
            guard buffer.add(name: item.name, inode: FuseInode(item.inode), kind: item.kind, nextOffset: UInt64(index + 1)) else { break }
            index += 1
        }
    }

    public func readDirectoryPlus(_ inode: FuseInode, handle: UInt64, offset: UInt64,
                                  into buffer: inout FuseDirectoryPlusBuffer, request: FuseRequest) throws {
        try locked { () throws(FuseError) in
            let entries = directorySnapshots[handle] ?? []
            var index = Int(offset)
            while index < entries.count {
                let item = entries[index]
                // An entry that vanished since opendir is skipped, not an error.
                if let itemEntry = try? entry(inodeToHandOut(item)) {
                    guard buffer.add(name: item.name, entry: itemEntry, nextOffset: UInt64(index + 1)) else { break }
                }
                index += 1
            }
        }
    }

    /// readdirplus hands the kernel a reference, as a lookup does: the
    /// entry gets its inode now (a number shown at opendir may have been
    /// forgotten since, or never allocated).
    private func inodeToHandOut(_ item: DirectoryEntry) -> UInt64 {
        switch item.object {
        case .row(let ref)?: return names.inodes.inode(for: ref)
        case .scratch(let folder, let name)?: return names.inodes.inode(forScratch: folder, name)
        case .conflictCopy(let ref, let dot)?: return names.inodes.inode(forConflict: ref, dot)
        case .kept(let node)?: return keptInode(node)
        default: return item.inode
        }
    }

    public func releaseDirectory(_ inode: FuseInode, handle: UInt64, request: FuseRequest) throws {
        locked { _ = directorySnapshots.removeValue(forKey: handle) }
    }

    /// No lock: it waits for the disk, and touches no table.
    public func synchronizeDirectory(_ inode: FuseInode, handle: UInt64, dataOnly: Bool, request: FuseRequest) throws {
        do { try store.sync() } catch { throw storeFailure(error, doing: "make the replica durable") }
    }

    // MARK: Folders of the notebook

    public func makeDirectory(parent: FuseInode, name typed: String, mode: UInt32, request: FuseRequest) throws -> FuseEntry {
        let name = CanonicalName(typed)
        return try locked { () throws(FuseError) -> FuseEntry in
            let slot = WatcherNotices.Slot(parent: parent.rawValue, name: name)
            if case .creating(let ref)? = watcherNotices.announced(slot, to: request.pid) {
                // The change feed telling watchers of a sibling's new folder.
                guard try resolve(name, in: try folder(parent.rawValue)) == .row(ref), names.isFolder(ref) else { throw .noEntry }
                watcherNotices.noteAnswered(slot)
                return try entry(names.inodes.inode(for: ref))
            }
            return spelled(typed, name, try makeFolder(name, in: parent.rawValue))
        }
    }

    private func makeFolder(_ name: CanonicalName, in parent: UInt64) throws(FuseError) -> FuseEntry {
        let folder = try folder(parent)
        guard folder.namespace == .notebook else {
            throw refuse(.notPermitted, "mkdir \(describe(parent))/\(name) refused: only the notebook has folders; the other folders are flat")
        }
        guard name.text.utf8.count <= FileNames.maximumNameBytes else {
            throw refuse(.nameTooLong, "mkdir \(name.text.prefix(40))…: a name is at most 255 bytes in NFC (\(name.text.utf8.count) given)")
        }
        guard let title = FileNames.folderTitle(name) else {
            throw refuse(.notPermitted, "mkdir \(describe(parent))/\(name) refused: an editor's temporary name cannot be a folder")
        }
        if try resolve(name, in: folder) != .none { throw .exists }
        // Two devices making the same folder meet on one row (its key is
        // derived from where it was made and its name), unless that key
        // already names a live row (the folder was renamed since).
        var key = RowKey.derived(separator: "quire.notebook.folder", name: (folder.folderKey?.hex ?? "") + "/" + title)
        if try listing(.notebook).rows[key] != nil { key = RowKey(bytes: (0..<16).map { _ in UInt8.random(in: 0...255) })! }
        let zero = Timestamp(seconds: 0)
        let content = RowContent.note(Note(title: title, body: [], createdAt: zero, updatedAt: zero, kind: .folder, folder: folder.folderKey))
        let ref = RowRef(namespace: .notebook, key: key)
        // The kernel holds the new folder under its name once this returns:
        // dropping that entry would leave a shell that went into it (`mkdir
        // d && cd d`) in a folder with no path.
        do { recordWrite(ref, try store.putFromMount(content, key: key), kernelKnows: name) } catch {
            throw storeFailure(error, doing: "make the folder \(describe(parent))/\(name)")
        }
        return try entry(names.inodes.inode(for: ref))
    }

    public func removeDirectory(parent: FuseInode, name typed: String, request: FuseRequest) throws {
        let name = CanonicalName(typed)
        try locked { () throws(FuseError) in
            // The change feed telling watchers of a folder that went: it is
            // gone already, and the kernel now keeps its inode dead.
            if case .removing(let child, let row, _)? = watcherNotices.announced(.init(parent: parent.rawValue, name: name), to: request.pid) {
                guard names.inodes.object(child) == .row(row) else { throw .noEntry }
                names.inodes.retire(child)
                return
            }
            try removeFolder(name, in: parent.rawValue)
            forgetCanonicalForm(of: typed, name, in: parent.rawValue)
        }
    }

    private func removeFolder(_ name: CanonicalName, in parent: UInt64) throws(FuseError) {
        let folder = try folder(parent)
        guard folder.namespace == .notebook else {
            if folder == .root, MountLayout.namespace(named: name) != nil || name == CanonicalName(MountLayout.controlFolderName) {
                throw refuse(.notPermitted, "rmdir \(configuration.mountpoint)/\(name) refused: the namespace folders are fixed")
            }
            throw .noEntry
        }
        guard case .row(let ref) = try resolve(name, in: folder) else { throw .noEntry }
        guard names.isFolder(ref) else { throw .notDirectory }
        let inside = Folder.subfolder(ref.key)
        guard try listing(.notebook).count(in: ref.key) == 0, names.pendingEntries(inside).isEmpty, scratch.names(inside).isEmpty else {
            throw .notEmpty
        }
        do { recordWrite(ref, try store.deleteFromMount(.notebook, ref.key)) } catch {
            throw storeFailure(error, doing: "remove the folder \(describe(parent))/\(name)")
        }
        scratch.removeDirectory(inside)
        // The kernel keeps the removed folder's inode dead: made again (the
        // same derived key), the folder needs another number.
        names.inodes.retire(ref)
    }

    func describe(_ inode: UInt64) -> String {
        switch names.inodes.object(inode) {
        case .root?: return configuration.mountpoint
        case .namespace(let namespace)?: return namespace.name
        case .control?: return MountLayout.controlFolderName
        case .row(let ref)? where names.isFolder(ref): return folderPath(.subfolder(ref.key))
        case .row(let ref)?: return rowPath(ref)
        case .scratch(let folder, let name)?: return folderPath(folder) + "/" + name.text
        default: return "inode \(inode)"
        }
    }
}
