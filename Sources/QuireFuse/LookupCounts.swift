import Synchronization

/// The kernel's references to each inode, counted as libfuse's low-level
/// API defines them: every entry a reply hands the kernel (lookup, create,
/// mkdir, mknod, symlink, link, and readdirplus entries other than "." and
/// "..") adds one; `forget` takes some back. At zero the filesystem is told
/// (`FuseFileSystem.forgotten`) and may drop the inode.
///
/// The hard part is the race between a forget that reaches zero and a
/// request that is handing the same inode out again: the filesystem has
/// already answered (with the inode still in its tables) but the count is
/// not raised yet. So requests that hand out entries are counted while in
/// flight, a zero reached meanwhile waits until none is, and the filesystem
/// is told with the lock held: no request can find the inode between the
/// check that its count is still zero and the filesystem dropping it.
final class LookupCounts: Sendable {
    private struct State {
        var counts: [UInt64: UInt64] = [:]
        var requestsInFlight = 0
        /// Counts that reached zero while requests were in flight.
        var waiting: Set<UInt64> = []
    }

    private let state = Mutex(State())

    /// Before a request that may hand out entries.
    func beginHandingOut() {
        state.withLock { $0.requestsInFlight += 1 }
    }

    /// After it: `inodes` go to the kernel now (a failed reply takes them back with `forget`).
    func endHandingOut(_ inodes: [UInt64], fileSystem: any FuseFileSystem) {
        state.withLock { state in
            for inode in inodes where inode != 0 { state.counts[inode, default: 0] += 1 }
            state.requestsInFlight -= 1
            guard state.requestsInFlight == 0, !state.waiting.isEmpty else { return }
            let waiting = state.waiting
            state.waiting.removeAll()
            for inode in waiting.sorted() where state.counts[inode] == nil { fileSystem.forgotten(FuseInode(inode)) }
        }
    }

    func forget(_ inode: UInt64, _ lookups: UInt64, fileSystem: any FuseFileSystem) {
        state.withLock { state in
            // Inodes never counted (the root) are the filesystem's own business.
            guard let count = state.counts[inode] else { return }
            if count > lookups {
                state.counts[inode] = count - lookups
                return
            }
            state.counts.removeValue(forKey: inode)
            if state.requestsInFlight > 0 {
                state.waiting.insert(inode)
            } else {
                fileSystem.forgotten(FuseInode(inode))
            }
        }
    }

    /// How many inodes the kernel holds references to.
    var count: Int { state.withLock { $0.counts.count } }

    func count(of inode: UInt64) -> UInt64 { state.withLock { $0.counts[inode] ?? 0 } }
}
