#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// The embedded relay for devices on one machine, with no server process.
///
/// Each subscription binds an AF_UNIX datagram socket at
/// `<directory>/<channel>/<random>.sock`; `publish` sends the frame to every
/// socket in `<directory>/<channel>/`. The kernel queues a datagram only for
/// a bound listener, so nothing is ever stored: a frame with no listener is
/// gone, and a socket file left by a dead listener is removed on the next
/// publish. The directory is mode 0700: only this user can listen or send.
public final class LocalRelay: Relay {
    /// 64 KiB: fits several frames in flight within the default
    /// net.core.wmem_max (208 KiB, doubled by the kernel), measured in tests.
    public static let defaultMaxFrameSize = 64 * 1024
    /// How long `publish` waits for one listener's full queue to drain before
    /// dropping the frame for it; a listener that stays full is then skipped
    /// without waiting until it reads again, so it cannot slow the sender.
    static let congestionGraceMilliseconds: Int32 = 50

    public let directory: String
    public let maxFrameSize: Int

    /// One connected, non-blocking sending socket per listener: the kernel
    /// charges queued datagrams to the sender's buffer, so sharing one socket
    /// would let a stuck listener block sends to everyone.
    private struct Sender {
        let fd: Int32
        var isCongested = false
    }
    private struct PublishState {
        var senders: [String: Sender] = [:]   // key: "<channel>/<socket name>"
        var isClosed = false
    }
    private let publishState = Mutex(PublishState())

    private let subscriptions = SubscriptionRegistry()

    /// Opens (creating with mode 0700 if needed) a relay directory.
    public init(directory: String, maxFrameSize: Int = LocalRelay.defaultMaxFrameSize) throws {
        self.directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        self.maxFrameSize = maxFrameSize
        try UnixSocket.makePrivateDirectory(self.directory)
        // Refuse a frame size this kernel cannot carry rather than fail on every publish.
        let probe = try UnixSocket.makeDatagramSocket(nonBlocking: true)
        defer { Glibc.close(probe) }
        let granted = UnixSocket.setBufferSize(probe, option: SO_SNDBUF, bytes: Self.sendBufferRequest(maxFrameSize))
        guard maxFrameSize + 4096 <= granted else {
            throw RelayError(.frameTooLarge,
                             "local relay cannot carry \(maxFrameSize)-byte frames: the kernel grants a \(granted)-byte send buffer (raise net.core.wmem_max)")
        }
    }

    deinit { close() }

    /// Room for several frames in flight per listener.
    static func sendBufferRequest(_ maxFrameSize: Int) -> Int { max(4 * maxFrameSize, 256 * 1024) }

    public func publish(_ frame: [UInt8], to channel: String) throws {
        try RelayChannel.validate(channel)
        guard frame.count <= maxFrameSize else {
            throw RelayError(.frameTooLarge, "frame of \(frame.count) bytes exceeds the local relay's \(maxFrameSize)-byte maximum: chunk it")
        }
        let channelPath = directory + "/" + channel
        try publishState.withLock { state in
            guard !state.isClosed else { throw RelayError(.closed, "local relay at \(directory) is closed") }
            guard let dir = opendir(channelPath) else {
                let code = errno
                // Nobody has ever listened on this channel: nothing to do.
                if code == ENOENT { return }
                throw RelayError(.systemCall, "opendir \(channelPath): \(errnoDescription(code))", errno: code)
            }
            defer { closedir(dir) }
            let dirFD = dirfd(dir)
            let names = UnixSocket.entries(of: dir, withSuffix: ".sock")
            var present = Set<String>()
            for name in names {
                let key = channel + "/" + name
                present.insert(key)
                deliver(frame, to: key, name: name, channelPath: channelPath, dirFD: dirFD, state: &state)
            }
            // Forget senders for listeners that went away.
            for (key, sender) in state.senders where key.hasPrefix(channel + "/") && !present.contains(key) {
                Glibc.close(sender.fd)
                state.senders[key] = nil
            }
        }
    }

    /// Sends to one listener; every failure here is that listener's, never the
    /// publisher's, so nothing is thrown.
    private func deliver(_ frame: [UInt8], to key: String, name: String, channelPath: String, dirFD: Int32,
                         state: inout PublishState) {
        if state.senders[key] == nil {
            guard let fd = try? UnixSocket.makeDatagramSocket(nonBlocking: true) else { return }
            UnixSocket.setBufferSize(fd, option: SO_SNDBUF, bytes: Self.sendBufferRequest(maxFrameSize))
            let connected = systemCallResult {
                UnixSocket.withAddress(directoryPath: channelPath, directoryFD: dirFD, name: name) { connect(fd, $0, $1) }
            }
            guard connected.value == 0 else {
                Glibc.close(fd)
                // Refused: the file outlived its listener (killed). Remove it.
                if connected.errno == ECONNREFUSED { unlinkat(dirFD, name, 0) }
                return
            }
            state.senders[key] = Sender(fd: fd)
        }
        guard var sender = state.senders[key] else { return }
        var sent = send(sender, frame)
        if sent.errno == EAGAIN || sent.errno == EWOULDBLOCK {
            // A live listener briefly behind: wait a little, once. A listener
            // already known to be stuck gets no wait.
            if !sender.isCongested {
                var pfd = pollfd(fd: sender.fd, events: Int16(POLLOUT), revents: 0)
                _ = systemCallResult { poll(&pfd, 1, Self.congestionGraceMilliseconds) }
                sent = send(sender, frame)
            }
            sender.isCongested = sent.errno == EAGAIN || sent.errno == EWOULDBLOCK
            state.senders[key] = sender
        } else if sender.isCongested && sent.errno == 0 {
            sender.isCongested = false
            state.senders[key] = sender
        }
        switch sent.errno {
        case 0, EAGAIN, EWOULDBLOCK:
            break   // delivered, or dropped for this listener: lossy by contract
        case ECONNREFUSED, ECONNRESET, ENOTCONN, EPIPE:
            // The listener died after we connected: forget it and its file.
            Glibc.close(sender.fd)
            state.senders[key] = nil
            unlinkat(dirFD, name, 0)
        default:
            Glibc.close(sender.fd)
            state.senders[key] = nil
        }
    }

    private func send(_ sender: Sender, _ frame: [UInt8]) -> (value: Int, errno: Int32) {
        systemCallResult { frame.withUnsafeBytes { Glibc.send(sender.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
    }

    public func subscribe(_ channel: String, handler: @escaping @Sendable ([UInt8]) -> Void) throws -> RelaySubscription {
        try RelayChannel.validate(channel)
        guard !subscriptions.isClosed else { throw RelayError(.closed, "local relay at \(directory) is closed") }
        let channelPath = directory + "/" + channel
        try UnixSocket.makePrivateDirectory(channelPath)
        let dirFD = try systemCall("open", on: channelPath) { open(channelPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { Glibc.close(dirFD) }

        let fd = try UnixSocket.makeDatagramSocket(nonBlocking: true)
        var name = ""
        do {
            // 64 random bits: names never repeat, so a stale file is never a live listener's.
            name = String(UInt64.random(in: .min ... .max), radix: 16) + ".sock"
            try systemCall("bind", on: channelPath + "/" + name) {
                UnixSocket.withAddress(directoryPath: channelPath, directoryFD: dirFD, name: name) { bind(fd, $0, $1) }
            }
            UnixSocket.setBufferSize(fd, option: SO_RCVBUF, bytes: Self.sendBufferRequest(maxFrameSize))
        } catch {
            Glibc.close(fd)
            throw error
        }

        let socketPath = channelPath + "/" + name
        let thread: ReceiveThread
        do {
            thread = try ReceiveThread()
            let maxFrameSize = self.maxFrameSize
            try thread.start { [thread] in
                Self.receive(fd: fd, maxFrameSize: maxFrameSize, thread: thread, handler: handler)
                Glibc.close(fd)
            }
        } catch {
            unlink(socketPath)
            Glibc.close(fd)
            throw error
        }

        let subscription = subscriptions.register(channel: channel) {
            // Remove the file first so publishers stop sending to it.
            unlink(socketPath)
            thread.stop()
        }
        guard let subscription else { throw RelayError(.closed, "local relay at \(directory) is closed") }
        return subscription
    }

    private static func receive(fd: Int32, maxFrameSize: Int, thread: ReceiveThread, handler: @Sendable ([UInt8]) -> Void) {
        // One byte spare so an oversize datagram is seen (MSG_TRUNC) and dropped whole.
        var buffer = [UInt8](repeating: 0, count: maxFrameSize + 1)
        while thread.wait(readable: fd) == .readable {
            while !thread.isStopping {
                let received = systemCallResult {
                    buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_TRUNC)) }
                }
                guard received.errno == 0 else { break }   // EAGAIN: drained
                let count = received.value
                if count > maxFrameSize { continue }
                handler(Array(buffer[0..<count]))
            }
        }
    }

    public func close() {
        subscriptions.closeAll()
        publishState.withLock { state in
            state.isClosed = true
            for sender in state.senders.values { Glibc.close(sender.fd) }
            state.senders = [:]
        }
    }
}
