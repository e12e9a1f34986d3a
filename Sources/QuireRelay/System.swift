#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// errno in words, e.g. "connection refused".
func errnoDescription(_ code: Int32) -> String {
    let text = String(cString: strerror(code))
    return text.prefix(1).lowercased() + text.dropFirst()
}

/// Runs a system call, retrying on EINTR, and turns -1 into a thrown error
/// naming the call and what it was called on.
@discardableResult
func systemCall<T: BinaryInteger>(_ name: String, on subject: String, _ call: () -> T) throws -> T {
    while true {
        let result = call()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        throw RelayError(.systemCall, "\(name) \(subject): \(errnoDescription(code))", errno: code)
    }
}

/// Returns the result, or -errno, retrying on EINTR: for calls whose errors
/// are expected and handled case by case (send, connect, recv).
func systemCallResult<T: BinaryInteger>(_ call: () -> T) -> (value: T, errno: Int32) {
    while true {
        let result = call()
        if result != -1 { return (result, 0) }
        let code = errno
        if code != EINTR { return (result, code) }
    }
}

/// A thread that runs one receive loop, with a wake-up file descriptor so
/// that `stop()` can interrupt a blocking `poll` at once.
final class ReceiveThread: Sendable {
    enum Wait { case readable, timedOut, stopping }

    // A self-pipe (Glibc's module map has no eventfd): stop() writes a byte,
    // which makes the poll in wait() return.
    private let wakeFD: Int32
    private let wakeWriteFD: Int32
    private struct State {
        var thread: pthread_t?
        var isStopping = false
        var isJoined = false
    }
    private let state = Mutex(State())

    init() throws {
        var fds: [Int32] = [-1, -1]
        try systemCall("pipe", on: "for a relay receive thread") { pipe(&fds) }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        wakeFD = fds[0]
        wakeWriteFD = fds[1]
    }

    deinit {
        close(wakeFD)
        close(wakeWriteFD)
    }

    var isStopping: Bool { state.withLock { $0.isStopping } }

    /// Starts `body` on a new thread; `body` should return when `isStopping`
    /// or `wait` says `.stopping`.
    func start(_ body: @escaping @Sendable () -> Void) throws {
        final class Context { let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body } }
        let context = Unmanaged.passRetained(Context(body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            let context = Unmanaged<Context>.fromOpaque(raw!).takeRetainedValue()
            context.body()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Context>.fromOpaque(context).release()
            throw RelayError(.systemCall, "pthread_create for a relay receive thread: \(errnoDescription(status))", errno: status)
        }
        state.withLock { $0.thread = thread }
    }

    /// Asks the loop to stop and waits for it to finish, unless called from
    /// the loop's own thread (a handler cancelling its own subscription), in
    /// which case the thread finishes by itself after the handler returns.
    func stop() {
        let toJoin: pthread_t? = state.withLock { state in
            if !state.isStopping {
                state.isStopping = true
                var one: UInt8 = 1
                _ = write(wakeWriteFD, &one, 1)
            }
            guard let thread = state.thread, !state.isJoined else { return nil }
            state.isJoined = true
            if pthread_equal(thread, pthread_self()) != 0 {
                pthread_detach(thread)
                return nil
            }
            return thread
        }
        if let thread = toJoin { pthread_join(thread, nil) }
    }

    /// Waits until `fd` is readable, `timeoutMilliseconds` pass (-1: forever),
    /// or `stop()` is called.
    func wait(readable fd: Int32, timeoutMilliseconds: Int32 = -1) -> Wait {
        var fds = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        let count = fd >= 0 ? 2 : 1
        while true {
            if isStopping { return .stopping }
            let result = poll(&fds, nfds_t(count), timeoutMilliseconds)
            if result < 0 && errno == EINTR { continue }
            if isStopping || fds[0].revents != 0 { return .stopping }
            if result == 0 { return .timedOut }
            // Errors and hang-ups count as readable: the read reports them.
            return .readable
        }
    }

    /// Sleeps up to `milliseconds`; false if woken by `stop()`.
    func sleep(milliseconds: Int32) -> Bool {
        wait(readable: -1, timeoutMilliseconds: milliseconds) != .stopping
    }
}
