import Foundation
import QuireCore
import QuireFuse
import QuireStore

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

/// Shows changes made outside the mount (another process such as
/// `quire put`, the sync engine) within a fraction of a second: polls the
/// store's change feed, updates the folder views, and tells the kernel to
/// drop what it cached. Also sends the invalidations the filesystem queued
/// itself — from this thread, never from inside a request handler, because
/// the kernel may be waiting on that very handler.
public final class ChangeFeed: @unchecked Sendable {
    private let fileSystem: QuireFileSystem
    private let session: FuseSession
    private let interval: TimeInterval
    private let lock = NSLock()
    private var isStopped = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)
    /// How long a row renamed into the scratch area waits for its name to come back.
    static let detachGrace: TimeInterval = 5

    public init(fileSystem: QuireFileSystem, session: FuseSession, interval: TimeInterval = 0.2) {
        self.fileSystem = fileSystem
        self.session = session
        self.interval = interval
    }

    public func start() {
        let thread = Thread { [self] in
            while !stopped {
                poll()
                Thread.sleep(forTimeInterval: interval)
            }
            finished.signal()
        }
        thread.name = "quire-change-feed"
        self.thread = thread
        thread.start()
    }

    public func stop() {
        lock.lock()
        let wasRunning = thread != nil && !isStopped
        isStopped = true
        lock.unlock()
        if wasRunning { finished.wait() }
    }

    private var stopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return isStopped
    }

    /// One round: read the feed, apply it, send the invalidations.
    public func poll() {
        let work = fileSystem.takeChanges()
        for invalidation in work {
            switch invalidation {
            case .entry(let parent, let name):
                try? session.invalidateEntry(parent: FuseInode(parent), name: name.text)
            case .spelling(let parent, let name):
                // Names are UTF-8 (others are refused), so this keeps the bytes.
                try? session.invalidateEntry(parent: FuseInode(parent), name: String(decoding: name, as: UTF8.self))
            case .inode(let inode):
                try? session.invalidateInode(FuseInode(inode))
            }
        }
    }
}

extension QuireFileSystem {
    /// Applies everything the store changed since the last round and hands
    /// back the invalidations to send (ours and the feed's).
    func takeChanges() -> [Invalidation] {
        locked {
            do {
                let sequence = try store.changeSequence()
                if sequence > lastSeenSequence {
                    for summary in try store.changes(since: lastSeenSequence) { applyExternal(summary) }
                    lastSeenSequence = sequence
                }
            } catch {
                log.problem("cannot read the change feed: \(error)")
            }
            let now = Date()
            for (ref, row) in detached where now.timeIntervalSince(row.since) > ChangeFeed.detachGrace {
                finishDetach(ref)
            }
            // A name that changed also changes its folder's cached listing.
            for case .entry(let parent, _) in invalidations { invalidations.append(.inode(parent)) }
            var seen = Set<Invalidation>()
            let work = invalidations.filter { seen.insert($0).inserted }
            invalidations.removeAll()
            return work
        }
    }

    private func applyExternal(_ summary: RowSummary) {
        let ref = RowRef(namespace: summary.namespace, key: summary.key)
        guard MountLayout.namespaces.contains(summary.namespace) else { return }
        renderedSizes.removeValue(forKey: ref)
        applyToListing(summary)
        if let own = selfWrites[ref], own >= summary.seq {
            selfWrites.removeValue(forKey: ref)
            return   // our own write: the kernel already has these bytes
        }
        selfWrites.removeValue(forKey: ref)
        // Someone else changed the row: a clean working copy follows it; a
        // dirty one keeps the user's edit (committed at its flush).
        if var copy = working[ref], !copy.isDirty {
            if let content = try? store.row(ref.namespace, ref.key)?.content, let bytes = RowFormat.render(content) {
                copy.content = bytes
                copy.title = content.displayName
                copy.seq = summary.seq
                working[ref] = copy
            }
        }
        for inode in inodes.inodesOfRow[ref] ?? [] {
            kernelCachedSeq.removeValue(forKey: inode)
            invalidations.append(.inode(inode))
        }
    }
}
