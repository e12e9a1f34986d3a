/// A filesystem served through FUSE's low-level (inode-based) API.
///
/// Every method is called on libfuse's worker threads, many at once, so the
/// conforming class must guard its own state. Throw a `FuseError` to reply
/// with that errno; any other error replies EIO (or its `FuseErrorConvertible`
/// errno). Implement only what you need: the defaults below reply as libfuse
/// does for an operation that is not registered (mostly ENOSYS).
///
/// Beware: a method whose signature differs from the requirement by a label or
/// type is a new overload, and the default is silently used instead.
///
/// Lookup counting: every `FuseEntry` the kernel receives (from lookup,
/// mkdir, create, mknod, symlink, link and readdirplus) adds one reference to
/// its inode; `forget` takes references back. The session counts them and
/// calls `forgotten` at zero. An inode whose name was removed must keep
/// answering getattr/read/... until then.
public protocol FuseFileSystem: AnyObject, Sendable {
    /// Called once when the kernel connects, before any other request.
    func initialize(connection: inout FuseConnection)
    /// Called once when the session ends (after unmount, or at teardown).
    func destroy()

    func lookup(parent: FuseInode, name: String, request: FuseRequest) throws -> FuseEntry
    /// The kernel dropped `lookups` references to `inode`. No reply is possible.
    func forget(_ inode: FuseInode, lookups: UInt64)
    /// Several forgets at once; the default calls `forget` for each.
    func forget(_ batch: [FuseForget])
    /// The kernel holds no reference to `inode` any more: the session
    /// counted every entry it handed out and every forget (see
    /// `LookupCounts`). The inode may be dropped; no request names it again
    /// until a reply hands it out anew. Called with no request in flight
    /// that could hand it out, so keep it short.
    func forgotten(_ inode: FuseInode)

    /// `handle` is the open file's handle when the call comes through one (fstat).
    func getAttributes(_ inode: FuseInode, handle: UInt64?, request: FuseRequest) throws -> FuseAttributeReply
    func setAttributes(_ inode: FuseInode, _ changes: FuseAttributeChanges, handle: UInt64?,
                       request: FuseRequest) throws -> FuseAttributeReply
    func access(_ inode: FuseInode, mask: FuseAccessMask, request: FuseRequest) throws
    func statistics(_ inode: FuseInode, request: FuseRequest) throws -> FuseFilesystemStatistics

    func openDirectory(_ inode: FuseInode, flags: FuseOpenFlags, request: FuseRequest) throws -> FuseOpenReply
    /// Fill `buffer` with entries after `offset` (0 = from the start).
    func readDirectory(_ inode: FuseInode, handle: UInt64, offset: UInt64,
                       into buffer: inout FuseDirectoryBuffer, request: FuseRequest) throws
    /// Only called when `FuseSession.Options.usesReadDirectoryPlus` is on.
    func readDirectoryPlus(_ inode: FuseInode, handle: UInt64, offset: UInt64,
                           into buffer: inout FuseDirectoryPlusBuffer, request: FuseRequest) throws
    func releaseDirectory(_ inode: FuseInode, handle: UInt64, request: FuseRequest) throws
    func synchronizeDirectory(_ inode: FuseInode, handle: UInt64, dataOnly: Bool, request: FuseRequest) throws

    func open(_ inode: FuseInode, flags: FuseOpenFlags, request: FuseRequest) throws -> FuseOpenReply
    /// Create and open a regular file. `mode` includes S_IFREG and has the
    /// caller's umask applied.
    func create(parent: FuseInode, name: String, mode: UInt32, flags: FuseOpenFlags,
                request: FuseRequest) throws -> FuseCreateReply
    /// Return at most `size` bytes; fewer means end of file (unless direct I/O).
    func read(_ inode: FuseInode, handle: UInt64, offset: UInt64, size: Int, request: FuseRequest) throws -> [UInt8]
    /// Return how many bytes were written (normally all of them).
    func write(_ inode: FuseInode, handle: UInt64, offset: UInt64, data: [UInt8],
               flags: FuseOpenFlags, request: FuseRequest) throws -> Int
    /// Called on every close(2) of a file descriptor (may be several per open).
    func flush(_ inode: FuseInode, handle: UInt64, request: FuseRequest) throws
    func synchronize(_ inode: FuseInode, handle: UInt64, dataOnly: Bool, request: FuseRequest) throws
    /// The last reference to the open file is gone. Errors are not seen by anyone.
    func release(_ inode: FuseInode, handle: UInt64, flags: FuseOpenFlags, request: FuseRequest) throws

    /// `mode` holds permission bits only, with the caller's umask applied.
    func makeDirectory(parent: FuseInode, name: String, mode: UInt32, request: FuseRequest) throws -> FuseEntry
    func makeNode(parent: FuseInode, name: String, mode: UInt32, device: UInt64, request: FuseRequest) throws -> FuseEntry
    func makeSymbolicLink(parent: FuseInode, name: String, target: String, request: FuseRequest) throws -> FuseEntry
    func readSymbolicLink(_ inode: FuseInode, request: FuseRequest) throws -> String
    func link(_ inode: FuseInode, newParent: FuseInode, newName: String, request: FuseRequest) throws -> FuseEntry
    func unlink(parent: FuseInode, name: String, request: FuseRequest) throws
    func removeDirectory(parent: FuseInode, name: String, request: FuseRequest) throws
    func rename(parent: FuseInode, name: String, newParent: FuseInode, newName: String,
                flags: FuseRenameFlags, request: FuseRequest) throws

    /// Return the value; the wrapper answers size probes and ERANGE itself.
    /// Throw `.noData` when the attribute does not exist.
    func extendedAttribute(_ inode: FuseInode, name: String, request: FuseRequest) throws -> [UInt8]
    func setExtendedAttribute(_ inode: FuseInode, name: String, value: [UInt8],
                              flags: FuseExtendedAttributeFlags, request: FuseRequest) throws
    /// Return the names; the wrapper joins them and answers size probes.
    func extendedAttributeNames(_ inode: FuseInode, request: FuseRequest) throws -> [String]
    func removeExtendedAttribute(_ inode: FuseInode, name: String, request: FuseRequest) throws
}

extension FuseFileSystem {
    public func initialize(connection: inout FuseConnection) {}
    public func destroy() {}

    public func lookup(parent: FuseInode, name: String, request: FuseRequest) throws -> FuseEntry {
        throw FuseError.notSupported
    }
    public func forget(_ inode: FuseInode, lookups: UInt64) {}
    public func forget(_ batch: [FuseForget]) {
        for item in batch { forget(item.inode, lookups: item.lookups) }
    }
    public func forgotten(_ inode: FuseInode) {}

    public func getAttributes(_ inode: FuseInode, handle: UInt64?, request: FuseRequest) throws -> FuseAttributeReply {
        throw FuseError.notSupported
    }
    public func setAttributes(_ inode: FuseInode, _ changes: FuseAttributeChanges, handle: UInt64?,
                              request: FuseRequest) throws -> FuseAttributeReply {
        throw FuseError.notSupported
    }
    /// ENOSYS makes the kernel stop calling access and allow everything that
    /// the permission bits (with `default_permissions`) allow.
    public func access(_ inode: FuseInode, mask: FuseAccessMask, request: FuseRequest) throws {
        throw FuseError.notSupported
    }
    /// What libfuse answers with no statfs: an empty filesystem, names up to 255.
    public func statistics(_ inode: FuseInode, request: FuseRequest) throws -> FuseFilesystemStatistics {
        FuseFilesystemStatistics(blockSize: 512)
    }

    /// Succeeds with handle 0, as libfuse does when opendir is not registered.
    public func openDirectory(_ inode: FuseInode, flags: FuseOpenFlags, request: FuseRequest) throws -> FuseOpenReply {
        FuseOpenReply()
    }
    public func readDirectory(_ inode: FuseInode, handle: UInt64, offset: UInt64,
                              into buffer: inout FuseDirectoryBuffer, request: FuseRequest) throws {
        throw FuseError.notSupported
    }
    public func readDirectoryPlus(_ inode: FuseInode, handle: UInt64, offset: UInt64,
                                  into buffer: inout FuseDirectoryPlusBuffer, request: FuseRequest) throws {
        throw FuseError.notSupported
    }
    public func releaseDirectory(_ inode: FuseInode, handle: UInt64, request: FuseRequest) throws {}
    public func synchronizeDirectory(_ inode: FuseInode, handle: UInt64, dataOnly: Bool, request: FuseRequest) throws {
        throw FuseError.notSupported
    }

    /// Succeeds with handle 0, as libfuse does when open is not registered.
    public func open(_ inode: FuseInode, flags: FuseOpenFlags, request: FuseRequest) throws -> FuseOpenReply {
        FuseOpenReply()
    }
    /// ENOSYS here makes the kernel fall back to `makeNode` followed by `open`.
    public func create(parent: FuseInode, name: String, mode: UInt32, flags: FuseOpenFlags,
                       request: FuseRequest) throws -> FuseCreateReply {
        throw FuseError.notSupported
    }
    public func read(_ inode: FuseInode, handle: UInt64, offset: UInt64, size: Int, request: FuseRequest) throws -> [UInt8] {
        throw FuseError.notSupported
    }
    public func write(_ inode: FuseInode, handle: UInt64, offset: UInt64, data: [UInt8],
                      flags: FuseOpenFlags, request: FuseRequest) throws -> Int {
        throw FuseError.notSupported
    }
    /// ENOSYS: the kernel stops sending flush and close(2) succeeds.
    public func flush(_ inode: FuseInode, handle: UInt64, request: FuseRequest) throws {
        throw FuseError.notSupported
    }
    /// ENOSYS: the kernel stops sending fsync and fsync(2) succeeds.
    public func synchronize(_ inode: FuseInode, handle: UInt64, dataOnly: Bool, request: FuseRequest) throws {
        throw FuseError.notSupported
    }
    public func release(_ inode: FuseInode, handle: UInt64, flags: FuseOpenFlags, request: FuseRequest) throws {}

    public func makeDirectory(parent: FuseInode, name: String, mode: UInt32, request: FuseRequest) throws -> FuseEntry {
        throw FuseError.notSupported
    }
    public func makeNode(parent: FuseInode, name: String, mode: UInt32, device: UInt64,
                         request: FuseRequest) throws -> FuseEntry {
        throw FuseError.notSupported
    }
    public func makeSymbolicLink(parent: FuseInode, name: String, target: String,
                                 request: FuseRequest) throws -> FuseEntry {
        throw FuseError.notSupported
    }
    public func readSymbolicLink(_ inode: FuseInode, request: FuseRequest) throws -> String {
        throw FuseError.notSupported
    }
    public func link(_ inode: FuseInode, newParent: FuseInode, newName: String, request: FuseRequest) throws -> FuseEntry {
        throw FuseError.notSupported
    }
    public func unlink(parent: FuseInode, name: String, request: FuseRequest) throws {
        throw FuseError.notSupported
    }
    public func removeDirectory(parent: FuseInode, name: String, request: FuseRequest) throws {
        throw FuseError.notSupported
    }
    public func rename(parent: FuseInode, name: String, newParent: FuseInode, newName: String,
                       flags: FuseRenameFlags, request: FuseRequest) throws {
        throw FuseError.notSupported
    }

    /// ENOSYS: the kernel stops asking and getxattr(2) fails with EOPNOTSUPP.
    public func extendedAttribute(_ inode: FuseInode, name: String, request: FuseRequest) throws -> [UInt8] {
        throw FuseError.notSupported
    }
    public func setExtendedAttribute(_ inode: FuseInode, name: String, value: [UInt8],
                                     flags: FuseExtendedAttributeFlags, request: FuseRequest) throws {
        throw FuseError.notSupported
    }
    public func extendedAttributeNames(_ inode: FuseInode, request: FuseRequest) throws -> [String] {
        throw FuseError.notSupported
    }
    public func removeExtendedAttribute(_ inode: FuseInode, name: String, request: FuseRequest) throws {
        throw FuseError.notSupported
    }
}
