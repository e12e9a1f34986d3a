import Foundation

/// Who to wake after a commit. The store tells, nobody polls: the sync
/// engine and the mount's change feed wait on these instead of a timer.
/// Handlers run on the committing thread, after the store's lock is
/// released; they must only signal (set a flag, wake a thread).
final class CommitObservers: @unchecked Sendable {
    private let lock = NSLock()
    private var handlers: [UInt64: @Sendable () -> Void] = [:]
    private var watchers: Set<UInt64> = []
    private var nextID: UInt64 = 1
    private var watch: DirectoryWatch?

    func add(_ handler: @escaping @Sendable () -> Void, otherProcesses: String?) throws(StoreError) -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        let id = nextID
        nextID += 1
        if let databasePath = otherProcesses {
            if watch == nil {
                // Every commit, by any process, appends to the WAL.
                let url = URL(fileURLWithPath: databasePath)
                let name = url.lastPathComponent
                watch = try DirectoryWatch(directory: url.deletingLastPathComponent().path, names: [name, name + "-wal"]) { [weak self] in
                    self?.notify(watchersOnly: true)
                }
            }
            watchers.insert(id)
        }
        handlers[id] = handler
        return id
    }

    func remove(_ id: UInt64) {
        lock.lock()
        handlers.removeValue(forKey: id)
        var stopping: DirectoryWatch?
        if watchers.remove(id) != nil, watchers.isEmpty {
            stopping = watch
            watch = nil
        }
        lock.unlock()
        stopping?.stop()
    }

    /// `watchersOnly`: a commit seen by the watch (possibly another
    /// process's), told only to those that asked for other processes'.
    func notify(watchersOnly: Bool = false) {
        lock.lock()
        let all = handlers.filter { !watchersOnly || watchers.contains($0.key) }.map(\.value)
        lock.unlock()
        for handler in all { handler() }
    }
}

/// A registration made with `ReplicaStore.observeCommits`; ends at `cancel()`.
public final class CommitObservation: @unchecked Sendable {
    private let observers: CommitObservers
    private let id: UInt64
    private let lock = NSLock()
    private var isCancelled = false

    init(observers: CommitObservers, id: UInt64) {
        self.observers = observers
        self.id = id
    }

    public func cancel() {
        lock.lock()
        let first = !isCancelled
        isCancelled = true
        lock.unlock()
        if first { observers.remove(id) }
    }

    deinit { cancel() }
}

extension ReplicaStore {
    /// Calls `handler` after every commit made through this store, and with
    /// `otherProcesses`, also after commits by other processes (the CLI
    /// writing while a mount runs), seen through inotify on the database's
    /// WAL. A spurious call is possible (a checkpoint); a missed one is not.
    public func observeCommits(otherProcesses: Bool = false, _ handler: @escaping @Sendable () -> Void) throws(StoreError) -> CommitObservation {
        let id = try commitObservers.add(handler, otherProcesses: otherProcesses ? path : nil)
        return CommitObservation(observers: commitObservers, id: id)
    }
}
