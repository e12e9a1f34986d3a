import Foundation
import QuireCore
import QuireFuse
import QuireStore

/// What the mount adds to the device's status words.
public struct MountStatus: Sendable {
    public var mountpoint: String
    /// Recent problems (bad input, refused writes), oldest first.
    public var problems: [String]
    /// Files in the folders that are not rows and stay on this device.
    public var localOnlyFiles: [String]
    /// Files of the notebook tree kept on this device by `.quireignore`.
    public var ignoredFiles: [String] = []
    public var openFiles: Int
    /// How much the mount's tables hold (they shrink when the kernel forgets).
    public var tables: MountTableSizes
}

/// The replica as a folder: namespaces as folders, rows as files. See
/// mount/README.md for the layout, names, formats and semantics.
///
/// One lock guards the tables below. Nothing here calls the kernel while
/// holding it: cache invalidations are queued and sent by the change feed
/// thread (`ChangeFeed`).
///
/// What runs outside the lock: waiting for the disk (fsync, fsyncdir: they
/// make durable what is committed already), the change feed's read of what
/// changed (a sync import must not stall the mount; `applyExternal` skips a
/// row the tables already show newer), the status and digest text of the
/// control files, and a recall's wait for the network (`workingCopy`).
///
/// What stays under it, and why:
/// - every store write (commit, save by rename, exchange, retitle, delete,
///   tags): the store change and the table change must be one step to
///   other requests, or a write() landing between them is marked saved and
///   lost, a lookup finds the old name, or the change feed sees our write
///   before it is recorded as ours;
/// - the store reads such a write is decided on (the previous version and
///   the shown baseline of a commit, the target of a rename, a working copy
///   loaded to be kept): read after the lock is let go, they can be a
///   version another request has replaced meanwhile;
/// - listing a namespace (once per mount, before serving, `preloadListings`);
/// - reads of a row for the change feed's clean copies and for xattrs: small,
///   and their result goes straight into the tables;
/// - scratch I/O: a rename may close a handle's descriptor and the number be
///   reused by another file, so I/O through a descriptor happens while the
///   table says it is that handle's (fsync uses a `dup` instead); scratch
///   renames and writes belong to the rename they are part of.
public final class QuireFileSystem: FuseFileSystem, @unchecked Sendable {
    public struct Configuration: Sendable {
        /// Where editor junk and other non-row files live (the device's scratch folder).
        public var scratchPath: String
        public var mountpoint: String
        public var log: MountLog
        /// The words of `.quire/status` (text) and `.quire/status.json`.
        public var status: @Sendable (MountStatus) -> (text: String, json: [UInt8])
        /// The content of `.quire/digest`.
        public var digest: @Sendable () throws -> [UInt8]
        /// Brings an offloaded note body back (issue 5); nil: offloaded
        /// bodies cannot be read here, and reads fail with EIO.
        public var recall: (@Sendable (_ key: RowKey, _ contentHash: [UInt8], _ timeout: Double) throws -> [UInt8])?
        public var recallTimeout: Double
        /// Seconds the kernel may trust names and attributes; changes from
        /// elsewhere are pushed with explicit invalidations, so this only
        /// bounds how stale a missed one can be.
        public var cacheTimeout: Double

        public init(scratchPath: String, mountpoint: String, log: MountLog,
                    status: @escaping @Sendable (MountStatus) -> (text: String, json: [UInt8]),
                    digest: @escaping @Sendable () throws -> [UInt8],
                    recall: (@Sendable (RowKey, [UInt8], Double) throws -> [UInt8])? = nil,
                    recallTimeout: Double = 10, cacheTimeout: Double = 30) {
            self.scratchPath = scratchPath
            self.mountpoint = mountpoint
            self.log = log
            self.status = status
            self.digest = digest
            self.recall = recall
            self.recallTimeout = recallTimeout
            self.cacheTimeout = cacheTimeout
        }
    }

    let store: ReplicaStore
    let configuration: Configuration
    let scratch: ScratchArea
    let owner: (uid: UInt32, gid: UInt32)
    let mountedAt: FuseTimestamp
    var log: MountLog { configuration.log }

    let lock = NSLock()
    /// Held by one change-feed round's store read at a time (`applyStoreChanges`).
    let feedReadLock = NSLock()
    // Everything below is guarded by `lock`. The three tables own their
    // rules; this class routes each request between them and the store.
    /// Which name shows which row or scratch file, and the inode numbers.
    var names = NameIndex()
    /// Open handles and the working copies they share.
    var openFiles = OpenFileTable()
    /// What the kernel may cache, and the invalidations to send.
    var kernelCache = KernelCacheTracker()
    /// What file watchers are told of changes made elsewhere.
    var watcherNotices = WatcherNotices()
    /// Per row, the bytes this device last showed (opened for reading or
    /// wrote): the baseline a save-by-rename's deletions are computed against.
    var lastShown = ShownBaselines()
    var processGroups = ProcessGroups()
    /// Notebook rows deleted by name a moment ago: created again, the same row.
    var recentlyRemoved = RecentlyRemoved()
    var movedAway = MovedAway()
    /// Files created here that a sibling deleted while they were open or
    /// just closed, still listed (`ChangeFeed.ghostGrace`).
    var ghosts = GraceTable<RowRef>()
    /// New files named as temp files are, local until their grace ends.
    var provisional = ProvisionalFiles()
    /// Rendered rows no handle holds, checked against the stored change
    /// number at each open.
    var cleanCopies = CleanCopies()
    var directorySnapshots: [UInt64: [DirectoryEntry]] = [:]
    var nextDirectoryHandle: UInt64 = 1
    /// `user.*` attributes other than Quire's: kept for the session only.
    /// Their names follow the name rule too (`CanonicalName`).
    var transientAttributes: [UInt64: [CanonicalName: [UInt8]]] = [:]
    /// Inodes the kernel forgot while a handle was still open on them:
    /// dropped at that handle's release.
    var forgottenWhileOpen: Set<UInt64> = []
    var lastSeenSequence: Int64 = 0
    /// Room on the replica's disk for what a write makes of a text.
    var diskRoom: DiskRoom
    /// Parsed `.quireignore` files by folder (see IgnoredPaths.swift).
    var ignoreCache: [Folder: IgnoreRules] = [:]
    /// `.quire/trash` and `.quire/versions` (Control/KeptFiles.swift).
    var kept = KeptViews()
    /// Wakes the change feed (set by `ChangeFeed.start`): called after a
    /// request that left invalidations for it, or detached a row (whose
    /// grace the feed times).
    var wakeFeed: (@Sendable () -> Void)?

    public init(store: ReplicaStore, configuration: Configuration) throws {
        self.store = store
        self.configuration = configuration
        self.scratch = ScratchArea(root: configuration.scratchPath)
        self.owner = (getuid(), getgid())
        self.mountedAt = .now
        self.diskRoom = DiskRoom(path: (store.path as NSString).deletingLastPathComponent)
        for note in try scratch.prepare() { configuration.log.problem(note) }
        lastSeenSequence = try store.changeSequence()
        lastShown = ShownBaselines(startSequence: lastSeenSequence)
    }

    func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer {
            // Debug builds (and so the mount tests) check the open-file
            // table's rule after every request: no copy outlives its handles.
            assert(openFiles.unheldCopies.isEmpty, "working copies with no handle: \(openFiles.unheldCopies)")
            if kernelCache.hasQueuedWork { wakeFeed?() }
            lock.unlock()
        }
        return try body()
    }

    public func initialize(connection: inout FuseConnection) {
        // Names and sizes change behind the kernel's back (sync, other
        // processes): let a changed mtime or size drop cached pages.
        if connection.capable.contains(.autoInvalidateData) { connection.wanted.insert(.autoInvalidateData) }
        if connection.capable.contains(.readDirectoryPlus) { connection.wanted.insert(.readDirectoryPlus) }
        // No FUSE_CAP_POSIX_ACL: quire keeps no ACLs (permissions are
        // fixed), so ACL and security-label names answer EOPNOTSUPP, and
        // `ls -l` (coreutils) remembers that per device and stops asking.
        log.info("mounted at \(configuration.mountpoint)")
    }

    /// At unmount: nothing may stay uncommitted, and detached rows whose
    /// name never came back are deleted as the user's rename said.
    public func destroy() {
        locked {
            for ref in openFiles.dirtyRows {
                do { try commit(ref, shown: nil) } catch { keepUnsaved(ref, because: "\(error)") }
            }
            for ref in names.detached.keys.sorted(by: { $0.key < $1.key }) { finishDetach(ref) }
            promoteProvisionalFiles(at: Date(), all: true)
            try? store.sync()
        }
        log.info("unmounted \(configuration.mountpoint)")
    }

    // MARK: Listings and attributes

    func listing(_ namespace: Namespace) throws(FuseError) -> NamespaceListing {
        if let listing = names.listing(namespace) { return listing }
        do {
            let listing = NamespaceListing(namespace: namespace, summaries: try store.summaries(namespace))
            names.install(listing)
            return listing
        } catch {
            throw storeFailure(error, doing: "list \(namespace.name)")
        }
    }

    /// Lists every namespace now, so the first `ls` after mounting does not
    /// wait for a scan of the replica. Call before serving.
    public func preloadListings() {
        locked {
            for namespace in MountLayout.namespaces { _ = try? listing(namespace) }
            adoptLocalNotebookFiles()
            resumeProvisionalFiles()
        }
    }

    /// `nested`: the folder can hold folders. Its link count is then 1,
    /// "not counted" (as btrfs answers): fts (find, du, Foundation's
    /// enumerator) takes a count of 2 to mean "no subfolders" and skips them.
    func directoryAttributes(_ inode: UInt64, writable: Bool, nested: Bool = false) -> FuseAttributes {
        FuseAttributes(inode: FuseInode(inode), kind: .directory, permissions: writable ? 0o755 : 0o555, linkCount: nested ? 1 : 2,
                       uid: owner.uid, gid: owner.gid, accessTime: mountedAt, modificationTime: mountedAt, changeTime: mountedAt)
    }

    func attributes(_ inode: UInt64) throws(FuseError) -> FuseAttributes {
        guard let object = names.inodes.object(inode) else { throw .noEntry }
        switch object {
        case .root: return directoryAttributes(inode, writable: true, nested: true)
        case .namespace(let namespace): return directoryAttributes(inode, writable: !MountLayout.isReadOnly(namespace), nested: namespace == .notebook)
        case .control: return directoryAttributes(inode, writable: false)
        case .controlFile(let file):
            return FuseAttributes(inode: FuseInode(inode), kind: .regular, permissions: 0o444, uid: owner.uid, gid: owner.gid,
                                  size: UInt64(controlContents(file).count), accessTime: .now, modificationTime: .now, changeTime: .now)
        case .row(let ref):
            // A file removed or replaced while open: its descriptors still
            // stat it (and the kernel checks before each read).
            if let orphan = orphanAttributes(inode),
               names.inodes.primaryInode(of: ref) != inode || (try? rowAttributes(ref, inode: inode)) == nil {
                return orphan
            }
            return try rowAttributes(ref, inode: inode)
        case .conflictCopy(let ref, let dot):
            return try conflictCopyAttributes(inode, ref, dot)
        case .kept(let node): return try keptAttributes(node, inode: inode)
        case .scratch(let folder, let name):
            // Removed while open: its descriptors still stat it.
            guard let info = scratch.status(folder, name) ?? openScratchStatus(inode) else { throw .noEntry }
            return FuseAttributes(inode: FuseInode(inode), kind: .regular, permissions: UInt32(info.st_mode) & 0o7777,
                                  linkCount: UInt32(info.st_nlink), uid: owner.uid, gid: owner.gid, size: UInt64(info.st_size),
                                  accessTime: FuseTimestamp(seconds: Int64(info.st_atim.tv_sec), nanoseconds: UInt32(info.st_atim.tv_nsec)),
                                  modificationTime: FuseTimestamp(seconds: Int64(info.st_mtim.tv_sec), nanoseconds: UInt32(info.st_mtim.tv_nsec)),
                                  changeTime: FuseTimestamp(seconds: Int64(info.st_ctim.tv_sec), nanoseconds: UInt32(info.st_ctim.tv_nsec)))
        }
    }

    func rowAttributes(_ ref: RowRef, inode: UInt64) throws(FuseError) -> FuseAttributes {
        let permissions: UInt32 = MountLayout.isReadOnly(ref.namespace) ? 0o444 : 0o644
        let listed = names.isDetached(ref) ? nil : try listing(ref.namespace).rows[ref.key]
        // A row deleted elsewhere while files are open on it: they keep
        // their text (and a write brings the row back), so they still stat
        // it; the kernel checks before each read, which failed with ENOENT.
        if let copy = openFiles.copy(ref), copy.isDirty || copy.isNew || (listed == nil && openFiles.openCount(of: ref) > 0) {
            let time = copy.setModificationTime.map(FuseTimestamp.init(nanoseconds:)) ?? copy.modifiedAt
            return FuseAttributes(inode: FuseInode(inode), kind: .regular, permissions: permissions, uid: owner.uid, gid: owner.gid,
                                  size: UInt64(copy.content.count), accessTime: time,
                                  modificationTime: time, changeTime: copy.modifiedAt)
        }
        guard let listed else { throw .noEntry }
        // Whole seconds of the last edit; the nanoseconds are this device's
        // change number, so two edits within one second still change the
        // time (todoman, khard and the kernel's page cache go by it).
        let changed = FuseTimestamp(seconds: listed.updatedAt.seconds, nanoseconds: UInt32(UInt64(max(0, listed.seq)) % 1_000_000_000))
        // A time set by utimensat (cp -p, rsync, tar) is the file's mtime.
        let time = listed.modifiedAt.map(FuseTimestamp.init(nanoseconds:)) ?? changed
        if listed.isFolder {
            return FuseAttributes(inode: FuseInode(inode), kind: .directory, permissions: 0o755, linkCount: 1, uid: owner.uid, gid: owner.gid,
                                  accessTime: time, modificationTime: time, changeTime: changed)
        }
        let size: Int
        switch ref.namespace {
        // An open file's text is what reads serve: the listing may show an
        // older version for a moment (the feed applies the new one next).
        case .notebook, .saga: size = openFiles.copy(ref)?.content.count ?? listed.size
        default: size = try renderedSize(ref, seq: listed.seq)
        }
        return FuseAttributes(inode: FuseInode(inode), kind: .regular, permissions: permissions, uid: owner.uid, gid: owner.gid,
                              size: UInt64(size), blocks: listed.isOffloaded ? 0 : nil,
                              accessTime: time, modificationTime: time, changeTime: changed)
    }

    /// A scratch file's status through a descriptor open on `inode`.
    func openScratchStatus(_ inode: UInt64) -> stat? {
        for handle in openFiles.handles(where: { $0.inode == inode }) {
            guard case .scratch(let descriptor)? = openFiles[handle]?.target else { continue }
            var info = stat()
            if fstat(descriptor, &info) == 0 { return info }
        }
        return nil
    }

    /// The attributes of a removed row file that handles still hold open
    /// (no name links to it any more).
    func orphanAttributes(_ inode: UInt64) -> FuseAttributes? {
        guard let (bytes, modifiedAt) = openFiles.orphan(onInode: inode) else { return nil }
        return FuseAttributes(inode: FuseInode(inode), kind: .regular, permissions: 0o644, linkCount: 0, uid: owner.uid, gid: owner.gid,
                              size: UInt64(bytes.count), accessTime: modifiedAt, modificationTime: modifiedAt, changeTime: modifiedAt)
    }

    /// Structured rows have no stored text length: render once per version.
    func renderedSize(_ ref: RowRef, seq: Int64) throws(FuseError) -> Int {
        if let size = kernelCache.renderedSize(ref, version: seq) { return size }
        let size = try renderedContent(ref)?.count ?? 0
        kernelCache.recordRenderedSize(ref, version: seq, size: size)
        return size
    }

    /// The file text of a stored row; nil for a tombstone or missing row.
    func renderedContent(_ ref: RowRef) throws(FuseError) -> [UInt8]? {
        let row: Row?
        do { row = try store.row(ref.namespace, ref.key) } catch { throw storeFailure(error, doing: "read \(ref.namespace.name)/\(ref.key.hex)") }
        guard let content = row?.content else { return nil }
        return RowFormat.render(content)
    }

    func entry(_ inode: UInt64) throws(FuseError) -> FuseEntry {
        FuseEntry(try attributes(inode), attributeTimeout: configuration.cacheTimeout, entryTimeout: configuration.cacheTimeout)
    }

    func folderInode(_ folder: Folder) -> UInt64 { names.directoryInode(folder) }

    /// The file name a row shows under right now (for messages and invalidation).
    func displayName(_ ref: RowRef) -> String { names.displayName(ref) }

    /// A folder's path from the mount's top, for messages (`notebook/Projects/2026`).
    func folderPath(_ folder: Folder) -> String {
        switch folder {
        case .root: return configuration.mountpoint
        case .namespace(let namespace): return namespace.name
        case .subfolder:
            var parts: [String] = []
            var current = folder
            while case .subfolder(let key) = current, parts.count < 256 {
                let ref = RowRef(namespace: .notebook, key: key)
                parts.append(names.displayName(ref))
                current = names.folder(of: ref)
            }
            return ([Namespace.notebook.name] + parts.reversed()).joined(separator: "/")
        }
    }

    /// A row's path from the mount's top, for messages.
    func rowPath(_ ref: RowRef) -> String { folderPath(names.folder(of: ref)) + "/" + displayName(ref) }

    // MARK: Errors

    /// A store failure as an errno, with a line in the log and the status.
    func storeFailure(_ error: any Error, doing what: String) -> FuseError {
        guard let error = error as? StoreError else {
            log.problem("could not \(what): \(error)")
            return .io
        }
        log.problem("could not \(what): \(error.message)")
        switch error.kind {
        case .diskFull: return .noSpace
        case .readOnly: return .readOnly
        case .locked: return .busy
        case .permission: return .permissionDenied
        case .notFound: return .noEntry
        case .invalidInput: return .invalid
        case .conflict: return .exists
        case .corrupt, .foreign, .sqlite, .system: return .io
        }
    }

    func refuse(_ error: FuseError, _ message: String, kind: String? = nil) -> FuseError {
        log.problem(message, kind: kind)
        return error
    }
}

/// A directory listing as served: taken at opendir, so offsets stay
/// meaningful while names change.
struct DirectoryEntry {
    var name: String
    var inode: UInt64
    var kind: FuseFileKind
    /// What the entry shows, when its inode may come and go (rows, scratch files).
    var object: NodeObject? = nil
}
