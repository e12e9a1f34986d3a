import Foundation

/// inotify on one directory: calls `onChange` (on a thread of its own) when
/// any of `names` in it is created, written or renamed into place. The only
/// code that speaks inotify; no raw pointer leaves this file.
final class DirectoryWatch: @unchecked Sendable {
    private let fd: Int32
    /// A pipe's write end: a byte in it ends the thread.
    private let stopFD: Int32
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var isStopped = false

    init(directory: String, names: Set<String>, onChange: @escaping @Sendable () -> Void) throws(StoreError) {
        let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard fd >= 0 else { throw StoreError(.system(errno), "cannot watch \(directory): \(String(cString: strerror(errno)))") }
        let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE)
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            let code = errno
            close(fd)
            throw StoreError(.system(code), "cannot watch \(directory): \(String(cString: strerror(code)))")
        }
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            let code = errno
            close(fd)
            throw StoreError(.system(code), "cannot watch \(directory): \(String(cString: strerror(code)))")
        }
        for end in pipeFDs { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        self.fd = fd
        self.stopFD = pipeFDs[1]
        let wanted = Set(names.map { Array($0.utf8) })
        let readEnd = pipeFDs[0]
        let thread = Thread { [fd, done] in
            DirectoryWatch.run(fd: fd, stopFD: readEnd, wanted: wanted, onChange: onChange)
            close(readEnd)
            done.signal()
        }
        thread.name = "quire-watch"
        thread.start()
    }

    /// Ends the thread and closes the descriptors; safe to call twice.
    func stop() {
        lock.lock()
        let first = !isStopped
        isStopped = true
        lock.unlock()
        guard first else { return }
        var one: UInt8 = 1
        _ = write(stopFD, &one, 1)
        done.wait()
        close(fd)
        close(stopFD)
    }

    deinit { stop() }

    private static func run(fd: Int32, stopFD: Int32, wanted: Set<[UInt8]>, onChange: @Sendable () -> Void) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&fds, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 || fds[1].revents != 0 { return }
            // One commit is dozens of writes to the WAL: let the burst run
            // for `settleMs` before reading, watching only the stop pipe, so
            // its writes neither wake this thread again nor are read one by
            // one as they come (the kernel folds a repeated event into the
            // last unread one), then tell once.
            var stop = [pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0)]
            if poll(&stop, 1, Int32(settleMs)) > 0 { return }
            if drain(fd, into: &buffer, wanted: wanted) { onChange() }
        }
    }

    /// How long a burst of writes holds back its one call, in milliseconds.
    static let settleMs = 3

    /// Reads every queued event; whether any named a watched file.
    private static func drain(_ fd: Int32, into buffer: inout [UInt8], wanted: Set<[UInt8]>) -> Bool {
        var changed = false
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            if names(in: buffer[0..<n]).contains(where: wanted.contains) { changed = true }
        }
        return changed
    }

    /// The names in a batch of `struct inotify_event` records (a 16-byte
    /// header: wd, mask, cookie, len; then `len` bytes of NUL-padded name).
    static func names(in events: ArraySlice<UInt8>) -> [[UInt8]] {
        var names: [[UInt8]] = []
        var at = events.startIndex
        while at + 16 <= events.endIndex {
            let len = Int(events[at + 12]) | Int(events[at + 13]) << 8 | Int(events[at + 14]) << 16 | Int(events[at + 15]) << 24
            let start = at + 16, end = min(start + len, events.endIndex)
            names.append(Array(events[start..<end].prefix { $0 != 0 }))
            at = start + len
        }
        return names
    }
}
