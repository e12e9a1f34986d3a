import QuireFuse

/// What the mount's tables hold, for `.quire/status.json` and tests: they
/// should follow what the kernel holds, not grow with every file ever seen.
public struct MountTableSizes: Sendable, Equatable {
    /// Inode numbers that stand for something (fixed ones included).
    public var inodes: Int
    /// Inodes whose cached page version is tracked.
    public var cachedPageVersions: Int
    public var transientAttributes: Int
    public var workingCopies: Int
    public var directorySnapshots: Int
}

/// `forget`: the kernel dropped its last reference to an inode (QuireFuse
/// counts them), so every table lets go of it, unless a handle is still
/// open on it: the kernel may forget an inode before the release of its
/// last file reaches us, and the handle still needs the number.
extension QuireFileSystem {
    public func forgotten(_ inode: FuseInode) {
        locked {
            let number = inode.rawValue
            guard !InodeTable.isFixed(number) else { return }
            if openFiles.isOpen(inode: number) {
                forgottenWhileOpen.insert(number)
            } else {
                drop(number)
            }
        }
    }

    /// After a release: an inode forgotten while this handle was open goes now.
    func dropIfForgotten(_ inode: UInt64) {
        guard forgottenWhileOpen.contains(inode), !openFiles.isOpen(inode: inode) else { return }
        forgottenWhileOpen.remove(inode)
        drop(inode)
    }

    private func drop(_ inode: UInt64) {
        // A row's session attributes are kept for the session, not for as
        // long as the kernel caches the file: they wait under the number the
        // next lookup gives the row (its derived one). A replaced file's and
        // a scratch file's go with their number.
        let attributes = transientAttributes.removeValue(forKey: inode)
        if case .row(let ref)? = names.inodes.object(inode), names.inodes.primaryInode(of: ref) == inode, let attributes {
            transientAttributes[InodeTable.derivedInode(ref)] = attributes
        }
        names.inodes.drop(inode)
        kernelCache.forget(inode)
    }

    /// Called with the lock held.
    func tableSizes() -> MountTableSizes {
        MountTableSizes(inodes: names.inodes.count, cachedPageVersions: kernelCache.trackedInodes,
                        transientAttributes: transientAttributes.count, workingCopies: openFiles.copyCount,
                        directorySnapshots: directorySnapshots.count)
    }
}
