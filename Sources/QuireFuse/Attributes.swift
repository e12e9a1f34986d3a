import CFuse3
import Glibc

/// An inode number as the kernel knows it. `FuseInode.root` (1) is the mount's
/// top directory; the filesystem chooses every other number.
public struct FuseInode: RawRepresentable, Hashable, Comparable, Sendable,
    ExpressibleByIntegerLiteral, CustomStringConvertible
{
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt64) { self.rawValue = value }

    /// FUSE_ROOT_ID: the kernel always asks for the root by this number.
    public static let root = FuseInode(1)

    public static func < (lhs: FuseInode, rhs: FuseInode) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "inode \(rawValue)" }
}

/// What kind of object an inode is (the S_IFMT bits of a mode).
public enum FuseFileKind: Sendable, Hashable {
    case regular, directory, symbolicLink, fifo, socket, characterDevice, blockDevice

    /// The S_IFMT bits for this kind.
    public var modeBits: UInt32 {
        switch self {
        case .regular: return UInt32(Glibc.S_IFREG)
        case .directory: return UInt32(Glibc.S_IFDIR)
        case .symbolicLink: return UInt32(Glibc.S_IFLNK)
        case .fifo: return UInt32(Glibc.S_IFIFO)
        case .socket: return UInt32(Glibc.S_IFSOCK)
        case .characterDevice: return UInt32(Glibc.S_IFCHR)
        case .blockDevice: return UInt32(Glibc.S_IFBLK)
        }
    }

    /// The kind encoded in a full mode, or nil when the type bits are unknown
    /// (e.g. a `mode` from mkdir, which carries permission bits only).
    public init?(mode: UInt32) {
        switch mode & UInt32(Glibc.S_IFMT) {
        case UInt32(Glibc.S_IFREG): self = .regular
        case UInt32(Glibc.S_IFDIR): self = .directory
        case UInt32(Glibc.S_IFLNK): self = .symbolicLink
        case UInt32(Glibc.S_IFIFO): self = .fifo
        case UInt32(Glibc.S_IFSOCK): self = .socket
        case UInt32(Glibc.S_IFCHR): self = .characterDevice
        case UInt32(Glibc.S_IFBLK): self = .blockDevice
        default: return nil
        }
    }
}

/// A point in time with nanoseconds, as stat(2) reports it.
public struct FuseTimestamp: Hashable, Comparable, Sendable {
    public var seconds: Int64
    public var nanoseconds: UInt32

    public init(seconds: Int64, nanoseconds: UInt32 = 0) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    /// The wall clock now (CLOCK_REALTIME), which is what file times use.
    public static var now: FuseTimestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return FuseTimestamp(spec)
    }

    public static let epoch = FuseTimestamp(seconds: 0)

    /// A time in nanoseconds since 1970 (negative: before it).
    public init(nanoseconds total: Int64) {
        let (seconds, remainder) = total.quotientAndRemainder(dividingBy: 1_000_000_000)
        self.init(seconds: remainder < 0 ? seconds - 1 : seconds, nanoseconds: UInt32(remainder < 0 ? remainder + 1_000_000_000 : remainder))
    }

    /// The time in nanoseconds since 1970.
    public var totalNanoseconds: Int64 { seconds &* 1_000_000_000 &+ Int64(nanoseconds) }

    public static func < (lhs: FuseTimestamp, rhs: FuseTimestamp) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }

    init(_ spec: timespec) {
        self.init(seconds: Int64(spec.tv_sec), nanoseconds: UInt32(truncatingIfNeeded: spec.tv_nsec))
    }

    var cValue: timespec {
        timespec(tv_sec: time_t(seconds), tv_nsec: Int(nanoseconds))
    }
}

/// What stat(2) shows for one inode.
public struct FuseAttributes: Hashable, Sendable {
    public var inode: FuseInode
    public var kind: FuseFileKind
    /// Permission bits only (0o7777); the type bits come from `kind`.
    public var permissions: UInt32
    public var linkCount: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var size: UInt64
    /// 512-byte blocks allocated; nil means "derive from size" (what du shows).
    public var blocks: UInt64?
    /// Preferred I/O size; stat's st_blksize.
    public var blockSize: UInt32
    public var accessTime: FuseTimestamp
    public var modificationTime: FuseTimestamp
    public var changeTime: FuseTimestamp
    /// Device number, for character and block devices only.
    public var device: UInt64

    public init(
        inode: FuseInode, kind: FuseFileKind, permissions: UInt32,
        linkCount: UInt32 = 1, uid: UInt32 = 0, gid: UInt32 = 0, size: UInt64 = 0,
        blocks: UInt64? = nil, blockSize: UInt32 = 4096,
        accessTime: FuseTimestamp = .epoch, modificationTime: FuseTimestamp = .epoch,
        changeTime: FuseTimestamp = .epoch, device: UInt64 = 0
    ) {
        self.inode = inode
        self.kind = kind
        self.permissions = permissions & 0o7777
        self.linkCount = linkCount
        self.uid = uid
        self.gid = gid
        self.size = size
        self.blocks = blocks
        self.blockSize = blockSize
        self.accessTime = accessTime
        self.modificationTime = modificationTime
        self.changeTime = changeTime
        self.device = device
    }

    /// Type and permission bits together, as st_mode holds them.
    public var mode: UInt32 { kind.modeBits | (permissions & 0o7777) }

    var cValue: stat {
        var result = stat()
        result.st_ino = ino_t(inode.rawValue)
        result.st_mode = mode_t(mode)
        result.st_nlink = nlink_t(linkCount)
        result.st_uid = uid_t(uid)
        result.st_gid = gid_t(gid)
        result.st_size = off_t(clamping: size)
        result.st_blocks = blkcnt_t(clamping: blocks ?? (size + 511) / 512)
        result.st_blksize = blksize_t(blockSize)
        result.st_atim = accessTime.cValue
        result.st_mtim = modificationTime.cValue
        result.st_ctim = changeTime.cValue
        result.st_rdev = dev_t(device)
        return result
    }
}

extension FuseAttributes {
    /// Whether these permission bits let `request`'s caller do `mask`, as
    /// the kernel's own check (`default_permissions`) decides: root may read
    /// and write anything, and execute a folder or a file with any x bit;
    /// anyone else gets the owner's, the group's or the others' bits.
    /// Only the caller's primary group is known here.
    public func permits(_ mask: FuseAccessMask, for request: FuseRequest) -> Bool {
        if request.uid == 0 {
            return !mask.contains(.execute) || kind == .directory || permissions & 0o111 != 0
        }
        let shift: UInt32 = request.uid == uid ? 6 : request.gid == gid ? 3 : 0
        let granted = (permissions >> shift) & 0o7
        let wanted = UInt32(mask.intersection([.read, .write, .execute]).rawValue)
        return granted & wanted == wanted
    }
}

/// Attributes plus how long the kernel may cache them without asking again.
public struct FuseAttributeReply: Hashable, Sendable {
    public var attributes: FuseAttributes
    /// Seconds. Use a long timeout when attributes change only through the
    /// mount, and call `FuseSession.invalidateInode` when they change outside.
    public var timeout: Double

    public init(_ attributes: FuseAttributes, timeout: Double = 1) {
        self.attributes = attributes
        self.timeout = timeout
    }
}

/// A name resolved to an inode: the reply to lookup, mkdir, create, ...
///
/// Every entry the kernel receives (except a negative one) adds one to the
/// inode's lookup count, which `forget` later takes back.
public struct FuseEntry: Hashable, Sendable {
    public var attributes: FuseAttributes
    /// Must change when an inode number is reused for a different object.
    public var generation: UInt64
    /// Seconds the kernel may trust `attributes`.
    public var attributeTimeout: Double
    /// Seconds the kernel may trust that this name maps to this inode.
    public var entryTimeout: Double
    /// True for a cached "no such name" (inode 0), see `negative(timeout:)`.
    public private(set) var isNegative: Bool = false

    public var inode: FuseInode { attributes.inode }

    public init(
        _ attributes: FuseAttributes, generation: UInt64 = 0,
        attributeTimeout: Double = 1, entryTimeout: Double = 1
    ) {
        self.attributes = attributes
        self.generation = generation
        self.attributeTimeout = attributeTimeout
        self.entryTimeout = entryTimeout
    }

    /// A lookup reply that lets the kernel cache "no such name" for `timeout`
    /// seconds (throwing `.noEntry` caches nothing). Only valid from lookup.
    /// A name created outside the mount then needs `invalidateEntry`.
    public static func negative(timeout: Double) -> FuseEntry {
        var entry = FuseEntry(
            FuseAttributes(inode: FuseInode(0), kind: .regular, permissions: 0),
            attributeTimeout: 0, entryTimeout: timeout)
        entry.isNegative = true
        return entry
    }

    var parameters: fuse_entry_param {
        var parameters = fuse_entry_param()
        parameters.ino = isNegative ? 0 : attributes.inode.rawValue
        parameters.generation = generation
        parameters.attr = isNegative ? stat() : attributes.cValue
        parameters.attr_timeout = attributeTimeout
        parameters.entry_timeout = entryTimeout
        return parameters
    }
}

/// The changes a setattr request asks for (chmod, chown, truncate, utimens).
/// Only the values whose bit is in `fields` mean anything.
public struct FuseAttributeChanges: Sendable, Hashable {
    public struct Fields: OptionSet, Sendable, Hashable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        public static let mode = Fields(rawValue: FUSE_SET_ATTR_MODE)
        public static let uid = Fields(rawValue: FUSE_SET_ATTR_UID)
        public static let gid = Fields(rawValue: FUSE_SET_ATTR_GID)
        public static let size = Fields(rawValue: FUSE_SET_ATTR_SIZE)
        public static let accessTime = Fields(rawValue: FUSE_SET_ATTR_ATIME)
        public static let modificationTime = Fields(rawValue: FUSE_SET_ATTR_MTIME)
        /// The caller asked for "now"; `accessTime` already holds the time.
        public static let accessTimeNow = Fields(rawValue: FUSE_SET_ATTR_ATIME_NOW)
        /// The caller asked for "now"; `modificationTime` already holds the time.
        public static let modificationTimeNow = Fields(rawValue: FUSE_SET_ATTR_MTIME_NOW)
        public static let changeTime = Fields(rawValue: FUSE_SET_ATTR_CTIME)
    }

    public var fields: Fields
    /// Permission bits (0o7777) when `fields` contains `.mode`.
    public var permissions: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var size: UInt64
    public var accessTime: FuseTimestamp
    public var modificationTime: FuseTimestamp
    public var changeTime: FuseTimestamp

    public init(
        fields: Fields, permissions: UInt32 = 0, uid: UInt32 = 0, gid: UInt32 = 0, size: UInt64 = 0,
        accessTime: FuseTimestamp = .epoch, modificationTime: FuseTimestamp = .epoch,
        changeTime: FuseTimestamp = .epoch
    ) {
        self.fields = fields
        self.permissions = permissions
        self.uid = uid
        self.gid = gid
        self.size = size
        self.accessTime = accessTime
        self.modificationTime = modificationTime
        self.changeTime = changeTime
    }

    /// Applies the requested changes to `attributes` (ctime is left to the caller).
    public func applied(to attributes: FuseAttributes) -> FuseAttributes {
        var result = attributes
        if fields.contains(.mode) { result.permissions = permissions & 0o7777 }
        if fields.contains(.uid) { result.uid = uid }
        if fields.contains(.gid) { result.gid = gid }
        if fields.contains(.size) { result.size = size; result.blocks = nil }
        if fields.contains(.accessTime) { result.accessTime = accessTime }
        if fields.contains(.modificationTime) { result.modificationTime = modificationTime }
        if fields.contains(.changeTime) { result.changeTime = changeTime }
        return result
    }

    init(stat: stat, toSet: Int32) {
        var fields = Fields(rawValue: toSet)
        let now = FuseTimestamp.now
        // "Now" arrives without a time in the stat; resolve it here so the
        // filesystem only ever reads `accessTime` / `modificationTime`.
        var accessTime = FuseTimestamp(stat.st_atim)
        var modificationTime = FuseTimestamp(stat.st_mtim)
        if fields.contains(.accessTimeNow) { fields.insert(.accessTime); accessTime = now }
        if fields.contains(.modificationTimeNow) { fields.insert(.modificationTime); modificationTime = now }
        self.init(
            fields: fields, permissions: UInt32(stat.st_mode) & 0o7777,
            uid: UInt32(stat.st_uid), gid: UInt32(stat.st_gid),
            size: UInt64(clamping: stat.st_size),
            accessTime: accessTime, modificationTime: modificationTime,
            changeTime: FuseTimestamp(stat.st_ctim))
    }
}

/// What statfs(2) / df show for the mount.
public struct FuseFilesystemStatistics: Hashable, Sendable {
    public var blockSize: UInt64
    public var fragmentSize: UInt64
    public var blocks: UInt64
    public var freeBlocks: UInt64
    public var availableBlocks: UInt64
    public var files: UInt64
    public var freeFiles: UInt64
    public var availableFiles: UInt64
    public var maximumNameLength: UInt64

    public init(
        blockSize: UInt64 = 4096, fragmentSize: UInt64? = nil, blocks: UInt64 = 0,
        freeBlocks: UInt64 = 0, availableBlocks: UInt64? = nil, files: UInt64 = 0,
        freeFiles: UInt64 = 0, availableFiles: UInt64? = nil, maximumNameLength: UInt64 = 255
    ) {
        self.blockSize = blockSize
        self.fragmentSize = fragmentSize ?? blockSize
        self.blocks = blocks
        self.freeBlocks = freeBlocks
        self.availableBlocks = availableBlocks ?? freeBlocks
        self.files = files
        self.freeFiles = freeFiles
        self.availableFiles = availableFiles ?? freeFiles
        self.maximumNameLength = maximumNameLength
    }

    var cValue: statvfs {
        var result = statvfs()
        result.f_bsize = UInt(blockSize)
        result.f_frsize = UInt(fragmentSize)
        result.f_blocks = fsblkcnt_t(blocks)
        result.f_bfree = fsblkcnt_t(freeBlocks)
        result.f_bavail = fsblkcnt_t(availableBlocks)
        result.f_files = fsfilcnt_t(files)
        result.f_ffree = fsfilcnt_t(freeFiles)
        result.f_favail = fsfilcnt_t(availableFiles)
        result.f_namemax = UInt(maximumNameLength)
        return result
    }
}
