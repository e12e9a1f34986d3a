import Foundation

/// The unix stream socket of the daemon's control channel (see
/// `OffloadRuntime`): one thread accepts, one thread per connection. Only
/// this user can connect: the socket is mode 0600 inside the 0700 device
/// directory (or a 0700 directory of this user under /tmp).
final class ControlServer: @unchecked Sendable {
    private let path: String
    private let fd: Int32
    private let lock = NSLock()
    private var isStopped = false

    static func start(path: String, handler: @escaping @Sendable (ControlConnection) -> Void) throws(DaemonError) -> ControlServer {
        // Only the engine's process gets here (it holds sync.lock): a file
        // left at the path is a dead process's.
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw DaemonError("socket: \(String(cString: strerror(errno)))") }
        let bound = ControlConnection.withAddress(path) { bind(fd, $0, $1) == 0 }
        guard bound == true, chmod(path, 0o600) == 0, listen(fd, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw DaemonError("cannot listen on \(path): \(reason)")
        }
        let server = ControlServer(path: path, fd: fd)
        let thread = Thread { server.acceptLoop(handler) }
        thread.name = "quire-control"
        thread.start()
        return server
    }

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    private func acceptLoop(_ handler: @escaping @Sendable (ControlConnection) -> Void) {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                lock.lock(); let stopped = isStopped; lock.unlock()
                if stopped { return }
                usleep(10_000)
                continue
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let connection = ControlConnection(fd: client)
            let worker = Thread {
                handler(connection)
                connection.close()
            }
            worker.name = "quire-control-job"
            worker.start()
        }
    }

    func stop() {
        lock.lock()
        isStopped = true
        lock.unlock()
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        unlink(path)
    }
}

/// One end of a control connection: typed messages as JSON lines.
final class ControlConnection: @unchecked Sendable {
    private var fd: Int32
    private var buffer: [UInt8] = []
    private let writeLock = NSLock()

    init(fd: Int32) { self.fd = fd }

    /// Connects to a listening engine; nil when nothing answers (a stale
    /// socket file is removed).
    static func connect(path: String) -> ControlConnection? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        let connected = withAddress(path) { Glibc.connect(fd, $0, $1) == 0 }
        guard connected == true else {
            Glibc.close(fd)
            return nil
        }
        return ControlConnection(fd: fd)
    }

    static func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// Writes one message as a line; false when the peer is gone.
    @discardableResult
    func send<Message: Encodable>(_ message: Message) -> Bool {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard var data = try? encoder.encode(message) else { return false }
        data.append(UInt8(ascii: "\n"))
        writeLock.lock(); defer { writeLock.unlock() }
        var offset = 0
        let bytes = Array(data)
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// The next message; nil at the end of the stream, or on a line that
    /// is not one (a peer of another version: the caller says so).
    func receive<Message: Decodable>(_ type: Message.Type) -> Message?? {
        guard let line = readLine() else { return nil }
        return .some(try? JSONDecoder().decode(type, from: Data(line.utf8)))
    }

    /// The next line, or nil at the end of the stream.
    func readLine() -> String? {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            buffer += chunk[..<n]
        }
    }

    func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }

    deinit { close() }
}
