import CFuse3
import Glibc

/// Who is asking: the process behind the current request.
///
/// uid, gid and pid may be 0 when the caller lives in another PID or user
/// namespace, and are not meaningful for writes flushed from the page cache.
public struct FuseRequest: Hashable, Sendable {
    public var uid: UInt32
    public var gid: UInt32
    /// Thread id of the caller.
    public var pid: Int32
    /// The caller's umask; `create` and `mkdir` receive modes with it applied.
    public var umask: UInt32

    public init(uid: UInt32, gid: UInt32, pid: Int32, umask: UInt32 = 0o022) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.umask = umask
    }

    /// The `pid` the requests this thread makes carry: its thread id.
    public static var callingThreadID: Int32 { quire_fuse_thread_id() }

    init(_ request: fuse_req_t?) {
        guard let context = fuse_req_ctx(request)?.pointee else {
            self.init(uid: 0, gid: 0, pid: 0)
            return
        }
        self.init(uid: context.uid, gid: context.gid, pid: context.pid, umask: context.umask)
    }
}

/// The flags of open(2) / create as the filesystem sees them.
///
/// O_CREAT, O_EXCL and O_NOCTTY are consumed by the kernel. O_TRUNC does reach
/// `open` because libfuse enables atomic O_TRUNC by default: the kernel then
/// sends no separate truncating setattr, so `open` must truncate itself
/// (or clear `.atomicOpenTruncate` in `FuseConnection.wanted`).
public struct FuseOpenFlags: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public enum AccessMode: Sendable, Hashable { case readOnly, writeOnly, readWrite }

    public var accessMode: AccessMode {
        switch rawValue & O_ACCMODE {
        case O_WRONLY: return .writeOnly
        case O_RDWR: return .readWrite
        default: return .readOnly
        }
    }

    public var isReadable: Bool { accessMode != .writeOnly }
    public var isWritable: Bool { accessMode != .readOnly }
    public var isTruncating: Bool { rawValue & O_TRUNC != 0 }
    public var isAppending: Bool { rawValue & O_APPEND != 0 }
    public var isExclusive: Bool { rawValue & O_EXCL != 0 }
    public var isSynchronous: Bool { rawValue & O_SYNC != 0 }
}

/// What the filesystem tells the kernel about a freshly opened file.
public struct FuseOpenReply: Hashable, Sendable {
    public struct Options: OptionSet, Hashable, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// Keep the page cache from the previous open (contents unchanged).
        public static let keepCache = Options(rawValue: 1 << 0)
        /// Bypass the page cache: every read and write reaches the filesystem,
        /// and reads may return fewer bytes than asked without meaning EOF.
        public static let directIO = Options(rawValue: 1 << 1)
        /// The file cannot seek (a stream).
        public static let nonSeekable = Options(rawValue: 1 << 2)
        /// From `openDirectory` only: let the kernel cache readdir results.
        public static let cacheDirectory = Options(rawValue: 1 << 3)
        /// Do not send `flush` on close (nothing to do there).
        public static let noFlush = Options(rawValue: 1 << 4)
    }

    /// Passed back unchanged to read, write, flush, release, ...
    public var handle: UInt64
    public var options: Options

    public init(handle: UInt64 = 0, options: Options = []) {
        self.handle = handle
        self.options = options
    }

    func fill(_ info: inout fuse_file_info) {
        info.fh = handle
        info.keep_cache = options.contains(.keepCache) ? 1 : 0
        info.direct_io = options.contains(.directIO) ? 1 : 0
        info.nonseekable = options.contains(.nonSeekable) ? 1 : 0
        info.cache_readdir = options.contains(.cacheDirectory) ? 1 : 0
        info.noflush = options.contains(.noFlush) ? 1 : 0
    }
}

/// The reply to create: the new name's entry and the open file.
public struct FuseCreateReply: Hashable, Sendable {
    public var entry: FuseEntry
    public var open: FuseOpenReply

    public init(entry: FuseEntry, open: FuseOpenReply = FuseOpenReply()) {
        self.entry = entry
        self.open = open
    }
}

/// renameat2(2) flags.
public struct FuseRenameFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Fail with `.exists` if the target name exists (RENAME_NOREPLACE).
    public static let noReplace = FuseRenameFlags(rawValue: 1 << 0)
    /// Swap the two names atomically; both must exist (RENAME_EXCHANGE).
    public static let exchange = FuseRenameFlags(rawValue: 1 << 1)
    /// Leave a whiteout at the source (RENAME_WHITEOUT; overlayfs only).
    public static let whiteout = FuseRenameFlags(rawValue: 1 << 2)
}

/// setxattr(2) flags.
public struct FuseExtendedAttributeFlags: OptionSet, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Fail with `.exists` if the attribute exists (XATTR_CREATE).
    public static let create = FuseExtendedAttributeFlags(rawValue: 1)
    /// Fail with `.noData` if the attribute does not exist (XATTR_REPLACE).
    public static let replace = FuseExtendedAttributeFlags(rawValue: 2)
}

/// access(2) mask; empty means "does it exist" (F_OK).
public struct FuseAccessMask: OptionSet, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let read = FuseAccessMask(rawValue: R_OK)
    public static let write = FuseAccessMask(rawValue: W_OK)
    public static let execute = FuseAccessMask(rawValue: X_OK)
}

/// One item of a batch forget: drop `lookups` references to `inode`.
public struct FuseForget: Hashable, Sendable {
    public var inode: FuseInode
    public var lookups: UInt64

    public init(inode: FuseInode, lookups: UInt64) {
        self.inode = inode
        self.lookups = lookups
    }
}

/// The connection being negotiated in `initialize`: what the kernel can do and
/// what the filesystem wants. Change `wanted` (only within `capable`) or the
/// limits; libfuse has already filled in its defaults.
public struct FuseConnection: Sendable, Hashable {
    public struct Capabilities: OptionSet, Hashable, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        public static let asyncRead = Capabilities(rawValue: UInt32(FUSE_CAP_ASYNC_READ))
        /// O_TRUNC is handled by `open` instead of a separate setattr.
        public static let atomicOpenTruncate = Capabilities(rawValue: UInt32(FUSE_CAP_ATOMIC_O_TRUNC))
        public static let exportSupport = Capabilities(rawValue: UInt32(FUSE_CAP_EXPORT_SUPPORT))
        /// The kernel does not apply the umask; the filesystem must.
        public static let dontMask = Capabilities(rawValue: UInt32(FUSE_CAP_DONT_MASK))
        /// Drop cached data when mtime or size change on getattr.
        public static let autoInvalidateData = Capabilities(rawValue: UInt32(FUSE_CAP_AUTO_INVAL_DATA))
        public static let readDirectoryPlus = Capabilities(rawValue: UInt32(FUSE_CAP_READDIRPLUS))
        public static let readDirectoryPlusAuto = Capabilities(rawValue: UInt32(FUSE_CAP_READDIRPLUS_AUTO))
        public static let asyncDirectIO = Capabilities(rawValue: UInt32(FUSE_CAP_ASYNC_DIO))
        /// Writes land in the page cache first; off unless asked for.
        public static let writebackCache = Capabilities(rawValue: UInt32(FUSE_CAP_WRITEBACK_CACHE))
        public static let parallelDirectoryOperations = Capabilities(rawValue: UInt32(FUSE_CAP_PARALLEL_DIROPS))
        public static let handleKillPrivileges = Capabilities(rawValue: UInt32(FUSE_CAP_HANDLE_KILLPRIV))
        public static let cacheSymbolicLinks = Capabilities(rawValue: UInt32(FUSE_CAP_CACHE_SYMLINKS))
        public static let explicitInvalidateData = Capabilities(rawValue: UInt32(FUSE_CAP_EXPLICIT_INVAL_DATA))
    }

    public let protocolMajor: UInt32
    public let protocolMinor: UInt32
    public let capable: Capabilities
    public var wanted: Capabilities
    public var maximumWrite: UInt32
    public var maximumReadahead: UInt32
    public var maximumBackground: UInt32
    /// Finest timestamp granularity the filesystem stores, in nanoseconds.
    public var timeGranularity: UInt32

    init(_ info: fuse_conn_info) {
        protocolMajor = info.proto_major
        protocolMinor = info.proto_minor
        capable = Capabilities(rawValue: info.capable)
        wanted = Capabilities(rawValue: info.want)
        maximumWrite = info.max_write
        maximumReadahead = info.max_readahead
        maximumBackground = info.max_background
        timeGranularity = info.time_gran
    }

    func apply(to info: inout fuse_conn_info) {
        info.want = wanted.intersection(capable).rawValue
        info.max_write = maximumWrite
        info.max_readahead = maximumReadahead
        info.max_background = maximumBackground
        info.time_gran = timeGranularity
    }
}
