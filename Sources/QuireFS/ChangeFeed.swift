import Foundation
import QuireCore
import QuireFuse
import QuireStore

/// Shows changes made outside the mount (another process such as
/// `quire put`, the sync engine) as soon as they commit: woken by the
/// store's commit observer (and, for other processes, its watch on the
/// database), it updates the folder views and tells the kernel to drop
/// what it cached. Also sends the invalidations the filesystem queued
/// itself — from this thread, never from inside a request handler, because
/// the kernel may be waiting on that very handler. Idle, it sleeps.
public final class ChangeFeed: @unchecked Sendable {
    private let fileSystem: QuireFileSystem
    private let session: FuseSession
    private let condition = NSCondition()
    private var isStopped = false
    private var isWoken = false
    /// When the first commit not yet read came (`systemUptime`), if any.
    private var commitsSince: TimeInterval?
    private var thread: Thread?
    private var observation: CommitObservation?
    private let finished = DispatchSemaphore(value: 0)
    /// How long a row renamed into the scratch area waits for its name to come back.
    static let detachGrace: TimeInterval = 5
    /// How long after its last close a file created here keeps its name
    /// against a same-named sibling's (`NameIndex.claim`): longer than any
    /// program takes from writing a temp file to renaming it, short enough
    /// that two files created under one name on two devices soon show the
    /// same names everywhere.
    static let claimGrace: TimeInterval = 30
    /// How long after its last close a file created here, that a sibling
    /// deleted meanwhile, keeps its name: its program's rename of it (a
    /// save through a temp name both devices used) still finds it. After
    /// that the deletion shows: a listing, `rm -r` and `link()` see it.
    static let ghostGrace: TimeInterval = 2
    /// With no news, the feed still reads the store this often: the safety
    /// net for a change no watch reported (a database replaced under us).
    static let safetyInterval: TimeInterval = 30
    /// How long a round waits after a commit for the ones that follow it.
    static let commitWindow: TimeInterval = 0.004

    public init(fileSystem: QuireFileSystem, session: FuseSession) {
        self.fileSystem = fileSystem
        self.session = session
    }

    public func start() {
        var safety = Self.safetyInterval
        do {
            observation = try fileSystem.store.observeCommits(otherProcesses: true) { [weak self] in self?.committed() }
        } catch {
            // No inotify (a limit reached): this process's commits still
            // wake the feed; other processes' show within a second.
            fileSystem.log.problem("changes by other processes show within a second, not at once: \(error)")
            observation = try? fileSystem.store.observeCommits { [weak self] in self?.committed() }
            safety = 1
        }
        fileSystem.locked { fileSystem.wakeFeed = { [weak self] in self?.wake() } }
        let thread = Thread { [self, safety] in
            var deadline = Date(timeIntervalSinceNow: safety)
            while true {
                condition.lock()
                while !isWoken && !isStopped {
                    // The window is counted on the monotonic clock: a wall
                    // clock set back must not hold a round up.
                    let left = commitsSince.map { $0 + Self.commitWindow - ProcessInfo.processInfo.systemUptime }
                    if let left, left <= 0 { break }
                    let until = min(deadline, left.map { Date(timeIntervalSinceNow: $0) } ?? .distantFuture)
                    if until <= Date() { break }
                    _ = condition.wait(until: until)
                }
                let stop = isStopped
                isWoken = false
                commitsSince = nil
                condition.unlock()
                if stop { break }
                deadline = min(poll() ?? .distantFuture, Date(timeIntervalSinceNow: safety))
            }
            finished.signal()
        }
        thread.name = "quire-change-feed"
        self.thread = thread
        thread.start()
    }

    /// Runs a round now (the filesystem queued work).
    public func wake() {
        condition.lock()
        isWoken = true
        condition.signal()
        condition.unlock()
    }

    /// A commit (this process's, or another's seen on the WAL): one round
    /// `commitWindow` after the first of a burst covers them all. Most are
    /// the mount's own saves, which the tables show already; a save loop
    /// would otherwise pay two rounds a save (the commit, then its WAL
    /// write seen by the watch), each reading the store under its lock.
    private func committed() {
        condition.lock()
        if commitsSince == nil {
            commitsSince = ProcessInfo.processInfo.systemUptime
            condition.signal()
        }
        condition.unlock()
    }

    public func stop() {
        observation?.cancel()
        fileSystem.locked { fileSystem.wakeFeed = nil }
        condition.lock()
        let wasRunning = thread != nil && !isStopped
        isStopped = true
        condition.signal()
        condition.unlock()
        if wasRunning { finished.wait() }
    }

    /// One round: read the feed, apply it, send the invalidations, tell
    /// file watchers. Returns when the next round is due with no news (a
    /// detached row's or provisional file's grace).
    @discardableResult
    public func poll() -> Date? {
        let (work, news, due) = fileSystem.takeChanges()
        // Removals and renames first: the kernel must still have the name.
        var first: [WatcherNews] = [], then: [WatcherNews] = []
        for item in news {
            switch item {
            case .removed, .renamed: first.append(item)
            case .changed, .created: then.append(item)
            }
        }
        tell(WatcherNews.ordered(first))
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
        fileSystem.locked { fileSystem.kernelCache.delivered() }
        tell(WatcherNews.ordered(then))
        return due
    }

    /// The device of the mount's root while the session serves it (nil:
    /// unmounted, or something else is there now).
    private func servedDevice() -> dev_t? {
        var root = stat()
        guard session.kernelHolds(.root), stat(fileSystem.configuration.mountpoint, &root) == 0, root.st_ino == 1 else { return nil }
        return root.st_dev
    }

    private func announcing(_ announcements: [(WatcherNotices.Announcement, WatcherNotices.Slot)], _ call: () -> Void) {
        let thread = FuseRequest.callingThreadID
        fileSystem.locked { for (what, slot) in announcements { fileSystem.watcherNotices.begin(what, slot, thread: thread) } }
        call()
        fileSystem.locked { for (_, slot) in announcements { fileSystem.watcherNotices.end(slot) } }
    }

    /// The calls that raise the watchers' events (see `WatcherNotices`).
    /// Failures are nobody's concern: the folder is right either way.
    private func tell(_ news: [WatcherNews]) {
        guard !news.isEmpty, let device = servedDevice() else { return }
        var served: [String: Bool] = [:]
        // Each call goes by path: never into a folder the mount no longer
        // covers (unmounted meanwhile, and a file of that name beneath).
        func isServed(_ folder: String) -> Bool {
            if let known = served[folder] { return known }
            var here = stat()
            let answer = stat(folder, &here) == 0 && here.st_dev == device
            served[folder] = answer
            return answer
        }
        for item in news {
            switch item {
            case .removed(let parent, let child, let name, let path, let isFolder, let row):
                guard isServed(item.parentPath) else { continue }
                remove(parent: parent, child: child, row: row, name: name, path: path, isFolder: isFolder)
            case .changed(let inode, let path, let mode):
                guard isServed(item.parentPath), session.kernelHolds(FuseInode(inode)) else { continue }
                _ = chmod(path, mode_t(mode))
            case .created(let parent, let name, let ref, let path, let isFolder):
                guard isServed(item.parentPath) else { continue }
                create(parent: parent, name: name, ref: ref, path: path, isFolder: isFolder)
            case .renamed(let parent, let child, let name, let path, let newParent, let newName, let newPath, let ref):
                let fromServed = isServed(item.parentPath), toServed = isServed(WatcherNews.folderPath(of: newPath))
                // Told as one where the kernel holds the file and both folders
                // (the old one may have gone meanwhile); else as what it can be.
                if fromServed && toServed && session.kernelHolds(FuseInode(child)) && session.kernelHolds(FuseInode(newParent))
                    && rename(parent: parent, child: child, row: ref, name: name, path: path, newParent: newParent, newName: newName,
                              newPath: newPath) {
                    continue
                }
                if fromServed { remove(parent: parent, child: child, row: ref, name: name, path: path, isFolder: false) }
                if toServed { create(parent: newParent, name: newName, ref: ref, path: newPath, isFolder: false) }
            }
        }
    }

    private func remove(parent: UInt64, child: UInt64, row: RowRef, name: CanonicalName, path: String, isFolder: Bool) {
        guard session.kernelHolds(FuseInode(child)) else { return }
        announcing([(.removing(child: child, row: row, isFolder: isFolder), .init(parent: parent, name: name))]) {
            _ = isFolder ? rmdir(path) : unlink(path)
        }
    }

    private func create(parent: UInt64, name: CanonicalName, ref: RowRef, path: String, isFolder: Bool) {
        guard session.kernelHolds(FuseInode(parent)) else { return }
        let slot = WatcherNotices.Slot(parent: parent, name: name)
        // Someone who looked the name up since it came has the kernel
        // hold it, and the open opens it (the mkdir fails): drop that
        // entry, and try again if that happened once more in between.
        for _ in 0..<3 {
            try? session.invalidateEntry(parent: FuseInode(parent), name: name.text)
            announcing([(.creating(ref), slot)]) {
                if isFolder {
                    _ = mkdir(path, 0o755)
                } else {
                    let descriptor = open(path, O_CREAT | O_RDONLY | O_CLOEXEC, 0o644)
                    if descriptor >= 0 { close(descriptor) }
                }
            }
            if fileSystem.locked({ fileSystem.watcherNotices.takeAnswered(slot) }) { return }
        }
    }

    /// A file's rename, told as one: whether it reached the mount.
    private func rename(parent: UInt64, child: UInt64, row: RowRef, name: CanonicalName, path: String,
                        newParent: UInt64, newName: CanonicalName, newPath: String) -> Bool {
        let from = WatcherNotices.Slot(parent: parent, name: name), to = WatcherNotices.Slot(parent: newParent, name: newName)
        // As for a create: the new name must be one the kernel does not hold.
        for _ in 0..<3 {
            try? session.invalidateEntry(parent: FuseInode(newParent), name: newName.text)
            announcing([(.renaming(child: child, row: row), from), (.vacant, to)]) { _ = Glibc.rename(path, newPath) }
            if fileSystem.locked({ fileSystem.watcherNotices.takeAnswered(from) }) { return true }
        }
        return false
    }
}

extension QuireFileSystem {
    /// Applies everything the store changed since the last round and hands
    /// back the invalidations to send (ours and the feed's), and when the
    /// earliest detached row's or provisional file's grace ends.
    func takeChanges() -> (work: [Invalidation], news: [WatcherNews], due: Date?) {
        applyStoreChanges()
        return locked {
            let now = Date()
            for ref in names.expiredDetached(at: now, grace: ChangeFeed.detachGrace) { finishDetach(ref) }
            endClaims(at: now)
            endGhosts(at: now)
            promoteProvisionalFiles(at: now)
            let due = [names.nextDetachDeadline(grace: ChangeFeed.detachGrace), names.nextClaimDeadline(grace: ChangeFeed.claimGrace),
                       ghosts.nextDeadline(grace: ChangeFeed.ghostGrace), provisional.nextDeadline].compactMap { $0 }.min()
            return (kernelCache.take(), watcherNotices.take(), due)
        }
    }

    /// Applies what the store changed since the last round to the tables,
    /// queueing the invalidations and watcher news it makes.
    func applyStoreChanges() {
        // Read outside the lock: a sync import of thousands of rows must not
        // hold up every request on the mount while SQLite reads it. One
        // round reads at a time (the feed's, or a lookup's catching up), so
        // no range is read twice.
        feedReadLock.lock()
        defer { feedReadLock.unlock() }
        let since = locked { lastSeenSequence }
        var sequence = since
        var summaries: [RowSummary] = []
        do {
            sequence = try store.changeSequence()
            if sequence > since { summaries = try store.changes(since: since) }
        } catch {
            log.problem("cannot read the change feed: \(error)")
        }
        locked {
            for summary in summaries { applyExternal(summary) }
            lastSeenSequence = max(lastSeenSequence, sequence)
        }
    }

    /// A name not found may be a row another process stored a moment ago
    /// (`quire put`, then a read through the mount) that the feed has not
    /// applied yet: the tables catch up now, and the feed is woken to send
    /// what that queued. Whether the store was ahead.
    func catchUpWithStore() -> Bool {
        guard let sequence = try? store.changeSequence(), sequence > locked({ lastSeenSequence }) else { return false }
        applyStoreChanges()
        wakeFeed?()
        return true
    }

    /// Claims whose grace ended give their names back; a row still open keeps its claim.
    func endClaims(at now: Date) {
        for ref in names.expiredClaims(at: now, grace: ChangeFeed.claimGrace) {
            if openFiles.openCount(of: ref) > 0 {
                names.renewClaim(ref, at: now)
            } else {
                let (invalidations, changes) = names.endClaimReporting(ref)
                kernelCache.invalidate(invalidations)
                if !changes.isEmpty { tellWatchers(ref, changes, isTombstone: false, wasFolder: false) }
                // A sibling's deletion it kept its name against (`applyExternal`).
                if names.listing(ref.namespace)?.rows[ref.key] != nil { unlistIfVanished(ref) }
            }
        }
    }

    /// Deleted files kept for their program past their grace go: a file
    /// still open waits for its last close.
    func endGhosts(at now: Date) {
        for ref in ghosts.expired(at: now, grace: ChangeFeed.ghostGrace) {
            if openFiles.openCount(of: ref) > 0 {
                ghosts.renew(ref, at: now)
            } else {
                ghosts.remove(ref)
                if names.listing(ref.namespace)?.rows[ref.key] != nil { unlistIfVanished(ref) }
            }
        }
    }

    func applyExternal(_ summary: RowSummary) {
        let ref = RowRef(namespace: summary.namespace, key: summary.key)
        guard MountLayout.namespaces.contains(summary.namespace) else { return }
        // Read before a write of ours that has landed since: the tables
        // already show something newer, and the next round brings it.
        if let listed = names.listing(ref.namespace)?.rows[ref.key]?.seq, listed > summary.seq { return }
        if let own = kernelCache.ownWriteVersion(ref), own > summary.seq { return }
        // A file this device created and still claims, deleted by a sibling
        // that wrote over it (two devices saving through one temp name): it
        // keeps its name here, so its program's rename moves what it wrote
        // (`currentBytes`); the claim's end takes it away.
        if summary.isTombstone, claimedText(ref) != nil, names.listing(ref.namespace)?.rows[ref.key] != nil {
            // Its grace counts from its last close (a file open waits for it).
            let now = Date(), isOpen = openFiles.openCount(of: ref) > 0
            let closed = names.claimRenewed(ref) ?? .distantPast
            if isOpen || now.timeIntervalSince(closed) < ChangeFeed.ghostGrace {
                ghosts.renew(ref, at: isOpen ? now : closed)
                return
            }
        }
        kernelCache.rowChanged(ref)
        let wasFolder = names.isFolder(ref)
        let (invalidations, nameChanges) = names.applyReporting(summary)
        kernelCache.invalidate(invalidations)
        // Our own write: the kernel already has these bytes.
        if kernelCache.isOwnWrite(ref, version: summary.seq) { return }
        tellWatchers(ref, nameChanges, isTombstone: summary.isTombstone, wasFolder: wasFolder)
        // A note, card or plan a sibling moved or renamed: a save by rename
        // onto its old name by a program shown it here follows it (`MovedAway`).
        if MovedAway.namespaces.contains(ref.namespace), !summary.isTombstone, !wasFolder, !names.isFolder(ref) {
            for change in nameChanges where change.key == ref.key {
                if let old = change.old, let new = change.new, old != new {
                    movedAway.record(ref, leaving: old.name, in: Folder(ref.namespace, old.folder), at: Date())
                }
            }
        }
        // Someone else changed the row: a clean working copy follows it; a
        // dirty one keeps the user's edit (committed at its flush).
        if var copy = openFiles.copy(ref), !copy.isDirty {
            // The text and its change number from one read (see `workingCopy`).
            let read = openFiles.openCount(of: ref) == 0 ? nil : (try? store.rowWithChangeNumber(ref.namespace, ref.key)) ?? nil
            let content = read?.row.content
            let rendered = content.flatMap(RowFormat.render)
            openFiles.keepTextOfReaders(of: ref, becoming: rendered)
            if openFiles.openCount(of: ref) == 0 {
                openFiles.dropCopyIfUnheld(ref)
            } else if let content, let bytes = rendered {
                copy.content = bytes
                copy.title = content.displayName
                copy.place(content)
                copy.seq = summary.seq
                copy.storedSeq = read?.changeNumber ?? summary.seq
                openFiles.keep(copy, for: ref)
            }
        }
        kernelCache.invalidateInodes(names.inodes.inodesOfRow[ref] ?? [])
    }
}

extension QuireFileSystem {
    /// Queues what watchers are told of a change made elsewhere: names
    /// that went, came or changed (a sibling's rename; a name that gained
    /// a key marker), and a file whose name stayed but whose text or times
    /// changed. Folders that came or went too, not folders renamed (see
    /// `WatcherNotices`).
    func tellWatchers(_ ref: RowRef, _ changes: [NameChange], isTombstone: Bool, wasFolder: Bool) {
        for change in changes where change.old != change.new {
            let changed = RowRef(namespace: ref.namespace, key: change.key)
            let isFolder = names.isFolder(changed) || (changed == ref && wasFolder)
            if isFolder && change.old != nil && change.new != nil { continue }
            // A name in a folder that went meanwhile went with it (its rmdir
            // tells watchers): it has no path to call on any more.
            let old = change.old.flatMap { slot in
                slot.folder.map { names.isFolder(RowRef(namespace: ref.namespace, key: $0)) } ?? true ? slot : nil
            }
            // The file as the kernel holds it: the row's inode, never a
            // number derived from its key, which may stand for another file
            // now (a save by rename moves the temp file's number to the note
            // it replaced). Without one, the kernel holds no file of the row.
            let child = names.inodes.primaryInode(of: changed)
            if let old, let new = change.new, let child {
                let folder = Folder(ref.namespace, old.folder), newFolder = Folder(ref.namespace, new.folder)
                watcherNotices.queue(.renamed(parent: names.directoryInode(folder), child: child, name: old.name,
                                              path: mountPath(folder) + "/" + old.name.text, newParent: names.directoryInode(newFolder),
                                              newName: new.name, newPath: mountPath(newFolder) + "/" + new.name.text, ref: changed))
                continue
            }
            if let old, let child {
                let folder = Folder(ref.namespace, old.folder)
                watcherNotices.queue(.removed(parent: names.directoryInode(folder), child: child,
                                              name: old.name, path: mountPath(folder) + "/" + old.name.text, isFolder: isFolder, row: changed))
            }
            if let new = change.new {
                let folder = Folder(ref.namespace, new.folder)
                watcherNotices.queue(.created(parent: names.directoryInode(folder), name: new.name, ref: changed,
                                              path: mountPath(folder) + "/" + new.name.text, isFolder: isFolder))
            }
        }
        guard !isTombstone, !changes.contains(where: { $0.key == ref.key }), let inode = names.inodes.primaryInode(of: ref) else { return }
        let mode: UInt32 = MountLayout.isReadOnly(ref.namespace) ? 0o444 : 0o644
        watcherNotices.queue(.changed(inode: inode, path: mountPath(names.folder(of: ref)) + "/" + displayName(ref), mode: mode))
    }

    /// A folder's absolute path in the mount.
    func mountPath(_ folder: Folder) -> String {
        folder == .root ? configuration.mountpoint : configuration.mountpoint + "/" + folderPath(folder)
    }
}

