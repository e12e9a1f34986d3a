#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// AF_UNIX datagram sockets, addressed by a file in a directory.
enum UnixSocket {
    /// `sun_path` holds 108 bytes with the terminating NUL.
    static let maxPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Runs `body` with the address of `name` inside the directory at
    /// `directoryPath` (open as `directoryFD`). A path too long for `sun_path`
    /// (deep runtime directories, 64-hex channel ids) is reached through
    /// `/proc/self/fd/<fd>/<name>`, which the kernel resolves like any path.
    static func withAddress<R>(directoryPath: String, directoryFD: Int32, name: String,
                               _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var path = directoryPath + "/" + name
        if path.utf8.count > maxPathLength { path = "/proc/self/fd/\(directoryFD)/\(name)" }
        precondition(path.utf8.count <= maxPathLength, "socket name too long: \(name)")
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + path.utf8.count + 1)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    static func makeDatagramSocket(nonBlocking: Bool) throws -> Int32 {
        let flags = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        return try systemCall("socket", on: "(AF_UNIX, SOCK_DGRAM)") { socket(AF_UNIX, flags, 0) }
    }

    /// Sets a buffer size and returns what the kernel granted (it doubles the
    /// request for bookkeeping and caps it at net.core.[rw]mem_max).
    @discardableResult
    static func setBufferSize(_ fd: Int32, option: Int32, bytes: Int) -> Int {
        var requested = Int32(clamping: bytes)
        _ = setsockopt(fd, SOL_SOCKET, option, &requested, socklen_t(MemoryLayout<Int32>.size))
        var granted: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(fd, SOL_SOCKET, option, &granted, &length)
        return Int(granted)
    }

    /// Makes `path` a directory only this user can enter (mode 0700), creating
    /// parents as needed. An existing directory must be ours; it is tightened to 0700.
    static func makePrivateDirectory(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            let result = systemCallResult { mkdir(prefix, 0o700) }
            if result.value != 0 && result.errno != EEXIST {
                throw RelayError(.systemCall, "mkdir \(prefix): \(errnoDescription(result.errno))", errno: result.errno)
            }
        }
        var info = stat()
        try systemCall("stat", on: path) { stat(path, &info) }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw RelayError(.systemCall, "relay directory \(path) exists and is not a directory", errno: ENOTDIR)
        }
        // Someone else's directory (e.g. planted in /tmp) could let them listen in.
        guard info.st_uid == getuid() else {
            throw RelayError(.systemCall, "relay directory \(path) belongs to uid \(info.st_uid), not this user: refusing to use it", errno: EPERM)
        }
        if info.st_mode & 0o077 != 0 { _ = chmod(path, 0o700) }
    }

    /// Names of the entries in a directory ending in `suffix`.
    static func entries(of directory: OpaquePointer, withSuffix suffix: String) -> [String] {
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasSuffix(suffix) { names.append(name) }
        }
        return names
    }
}
