import QuireCore

/// A kernel cache entry to drop.
enum Invalidation: Hashable {
    /// A name in a folder (appeared, moved, went away), in its NFC form
    /// (other forms are never cached: `QuireFileSystem.spelled`).
    case entry(parent: UInt64, name: CanonicalName)
    /// A name in another form, byte for byte: where the kernel moved an
    /// entry by a rename to a name typed in that form.
    case spelling(parent: UInt64, name: [UInt8])
    /// An inode's attributes and cached pages.
    case inode(UInt64)
}

/// What the kernel may have cached, and what it must drop.
///
/// The kernel keeps a file's pages across opens when told to (`keepCache`):
/// that is right only while they hold exactly the row version we would
/// serve, so each inode's cached version is tracked and any change not made
/// through that inode queues an invalidation. Invalidations are only queued
/// here; the change feed sends them from its own thread, because the kernel
/// may be waiting on the very request that queued them.
struct KernelCacheTracker {
    /// Per inode, the row version its page cache holds.
    private var cachedVersion: [UInt64: Int64] = [:]
    /// Structured rows have no stored text length: rendered once per version.
    private var renderedSizes: [RowRef: (seq: Int64, size: Int)] = [:]
    /// Change numbers of our own writes: the kernel already has those bytes.
    private var ownWrites: [RowRef: Int64] = [:]
    private var queued: [Invalidation] = []
    /// Inodes whose invalidation is queued or on its way, by the round it
    /// was queued in: until the kernel has it, its size and pages may be an
    /// older version's than the row's, and a read would end where that
    /// version ended (see `mayHoldOlder`).
    private var undelivered: [UInt64: Int] = [:]
    private var round = 0
    private var roundTaken = 0

    var hasQueuedWork: Bool { !queued.isEmpty }

    /// Whether the kernel may still hold an older version's size or pages
    /// of `inode` than the one an open would serve now.
    func mayHoldOlder(_ inode: UInt64) -> Bool { undelivered[inode] != nil }

    // MARK: Pages

    /// A file opens on `inode` showing `version` (nil: unsaved text, which
    /// the kernel's pages cannot be trusted to hold). True when the pages
    /// the kernel has are that version and may be kept.
    mutating func opened(_ inode: UInt64, version: Int64?) -> Bool {
        let keeps = version != nil && cachedVersion[inode] == version
        cachedVersion[inode] = version
        return keeps
    }

    /// The inode's pages no longer match any version we know.
    mutating func distrustPages(of inode: UInt64) { cachedVersion.removeValue(forKey: inode) }

    // MARK: Sizes

    func renderedSize(_ ref: RowRef, version: Int64) -> Int? {
        guard let cached = renderedSizes[ref], cached.seq == version else { return nil }
        return cached.size
    }

    mutating func recordRenderedSize(_ ref: RowRef, version: Int64, size: Int) { renderedSizes[ref] = (version, size) }

    mutating func rowChanged(_ ref: RowRef) { renderedSizes.removeValue(forKey: ref) }

    // MARK: Own writes

    mutating func recordOwnWrite(_ ref: RowRef, version: Int64) { ownWrites[ref] = version }

    func ownWriteVersion(_ ref: RowRef) -> Int64? { ownWrites[ref] }

    /// Whether a change the store reports is one we made (and need not
    /// invalidate). Consumes the record either way.
    mutating func isOwnWrite(_ ref: RowRef, version: Int64) -> Bool {
        guard let own = ownWrites.removeValue(forKey: ref) else { return false }
        return own >= version
    }

    // MARK: Invalidations

    mutating func invalidate(_ invalidation: Invalidation) {
        if case .inode(let inode) = invalidation {
            cachedVersion.removeValue(forKey: inode)
            undelivered[inode] = round
        }
        queued.append(invalidation)
    }

    mutating func invalidate(_ invalidations: [Invalidation]) { for item in invalidations { invalidate(item) } }

    /// The kernel holds `name` in `parent` for the file the tables give it
    /// (it made or moved that entry itself): a queued invalidation of it
    /// is dropped. Dropping an entry that is a program's working folder
    /// leaves that program without a path (`mkdir d && cd d`, `git init`).
    mutating func kernelHolds(parent: UInt64, name: CanonicalName) {
        queued.removeAll { $0 == .entry(parent: parent, name: name) }
    }

    /// Drops the pages and attributes of every inode in `inodes`.
    mutating func invalidateInodes(_ inodes: some Sequence<UInt64>) { for inode in inodes { invalidate(.inode(inode)) } }

    /// The queued work, each item once; a name that changed also changes
    /// its folder's cached listing.
    mutating func take() -> [Invalidation] {
        for case .entry(let parent, _) in queued { queued.append(.inode(parent)) }
        var seen = Set<Invalidation>()
        let work = queued.filter { seen.insert($0).inserted }
        queued.removeAll()
        roundTaken = round
        round += 1
        return work
    }

    /// The work last taken reached the kernel.
    mutating func delivered() {
        undelivered = undelivered.filter { $0.value > roundTaken }
    }

    // MARK: Forgetting

    /// The kernel forgot `inode`: it holds no pages for it any more.
    mutating func forget(_ inode: UInt64) {
        cachedVersion.removeValue(forKey: inode)
        undelivered.removeValue(forKey: inode)
    }

    var trackedInodes: Int { cachedVersion.count }
}
