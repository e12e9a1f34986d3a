import CFuse3
import Glibc

/// The reply buffer of one readdir request. Add entries until `add` returns
/// false (the buffer is full), then return; the kernel asks again with the
/// `nextOffset` of the last entry that fit.
///
/// Offsets are the filesystem's cookies: `nextOffset` must be non-zero and
/// must still mean "resume after this entry" when entries are added or removed
/// in between (e.g. a row id, not a position in an array).
/// Non-copyable so it cannot outlive the request it belongs to.
public struct FuseDirectoryBuffer: ~Copyable {
    let request: fuse_req_t?
    let storage: UnsafeMutablePointer<CChar>
    public let capacity: Int
    public private(set) var usedBytes = 0
    public private(set) var count = 0

    init(request: fuse_req_t?, capacity: Int) {
        self.request = request
        self.capacity = capacity
        self.storage = .allocate(capacity: max(capacity, 1))
    }

    deinit { storage.deallocate() }

    /// Adds one entry; false when it does not fit (nothing was added).
    /// Only the inode and the kind are used for attributes: stat comes later.
    public mutating func add(name: String, inode: FuseInode, kind: FuseFileKind, nextOffset: UInt64) -> Bool {
        var attributes = stat()
        attributes.st_ino = ino_t(inode.rawValue)
        attributes.st_mode = mode_t(kind.modeBits)
        let remaining = capacity - usedBytes
        let needed = name.withCString { name in
            fuse_add_direntry(request, storage + usedBytes, remaining, name, &attributes, off_t(clamping: nextOffset))
        }
        guard needed <= remaining else { return false }
        usedBytes += needed
        count += 1
        return true
    }

    func reply() -> Int32 { fuse_reply_buf(request, storage, usedBytes) }
}

/// The reply buffer of one readdirplus request: like `FuseDirectoryBuffer`,
/// but every entry carries its full `FuseEntry`.
///
/// Each entry that fits (other than "." and "..") counts as one lookup of its
/// inode, exactly as if `lookup` had returned it, and will be forgotten later.
public struct FuseDirectoryPlusBuffer: ~Copyable {
    let request: fuse_req_t?
    let storage: UnsafeMutablePointer<CChar>
    public let capacity: Int
    public private(set) var usedBytes = 0
    public private(set) var count = 0

    init(request: fuse_req_t?, capacity: Int) {
        self.request = request
        self.capacity = capacity
        self.storage = .allocate(capacity: max(capacity, 1))
    }

    deinit { storage.deallocate() }

    /// The inodes this reply hands the kernel a reference to.
    private(set) var handedOut: [UInt64] = []

    /// Adds one entry; false when it does not fit (nothing was added, and the
    /// lookup count is unchanged).
    public mutating func add(name: String, entry: FuseEntry, nextOffset: UInt64) -> Bool {
        var parameters = entry.parameters
        let remaining = capacity - usedBytes
        let needed = name.withCString { name in
            fuse_add_direntry_plus(request, storage + usedBytes, remaining, name, &parameters, off_t(clamping: nextOffset))
        }
        guard needed <= remaining else { return false }
        usedBytes += needed
        count += 1
        if name != "." && name != ".." { handedOut.append(entry.attributes.inode.rawValue) }
        return true
    }

    func reply() -> Int32 { fuse_reply_buf(request, storage, usedBytes) }
}
