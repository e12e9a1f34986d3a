import CFuse3

// Why this file exists: CFuse3's shim.h defines _FILE_OFFSET_BITS 64 before
// including glibc headers, so its copies of `struct flock` and
// `struct statvfs` differ (by typedef name only) from the SwiftGlibc module's.
// Clang refuses to merge them, so no Swift module can import both CFuse3 and
// Glibc (or Foundation). QuireFuse therefore imports CFuse3 only, and reaches
// the few libc calls that CFuse3's headers do not declare through these
// bodiless declarations. All of them take and return plain integers and
// pointers, whose Swift and C calling conventions agree on Linux.
// Once shim.h drops the define (off_t is 64-bit on every 64-bit Linux
// anyway), this file can become `import Glibc`.

@_silgen_name("clock_gettime")
private func c_clock_gettime(_ clock: Int32, _ spec: UnsafeMutablePointer<timespec>) -> Int32
@_silgen_name("strerror")
private func c_strerror(_ code: Int32) -> UnsafeMutablePointer<CChar>?
// open(2) is variadic in C; with no O_CREAT the mode argument is never read,
// so calling it with two arguments is sound.
@_silgen_name("open")
private func c_open(_ path: UnsafePointer<CChar>, _ flags: Int32) -> Int32
@_silgen_name("read")
private func c_read(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int
@_silgen_name("close")
private func c_close(_ descriptor: Int32) -> Int32
@_silgen_name("umount2")
private func c_umount2(_ path: UnsafePointer<CChar>, _ flags: Int32) -> Int32
@_silgen_name("geteuid")
private func c_geteuid() -> UInt32
@_silgen_name("realpath")
private func c_realpath(_ path: UnsafePointer<CChar>, _ resolved: UnsafeMutablePointer<CChar>?) -> UnsafeMutablePointer<CChar>?
@_silgen_name("getcwd")
private func c_getcwd(_ buffer: UnsafeMutablePointer<CChar>?, _ size: Int) -> UnsafeMutablePointer<CChar>?
@_silgen_name("posix_spawn")
private func c_posix_spawn(
    _ pid: UnsafeMutablePointer<pid_t>, _ path: UnsafePointer<CChar>,
    _ fileActions: UnsafeRawPointer?, _ attributes: UnsafeRawPointer?,
    _ arguments: UnsafePointer<UnsafeMutablePointer<CChar>?>,
    _ environment: UnsafePointer<UnsafeMutablePointer<CChar>?>
) -> Int32
@_silgen_name("waitpid")
private func c_waitpid(_ pid: pid_t, _ status: UnsafeMutablePointer<Int32>?, _ options: Int32) -> pid_t

/// Typed doors onto the libc calls above; every failure is a `FuseError`.
enum LibC {
    static let clockRealtime: Int32 = 0
    /// MNT_DETACH from <sys/mount.h>.
    static let detach: Int32 = 2

    static func clock_gettime(_ clock: Int32, _ spec: UnsafeMutablePointer<timespec>) -> Int32 {
        c_clock_gettime(clock, spec)
    }

    static func strerror(_ code: Int32) -> UnsafeMutablePointer<CChar>? { c_strerror(code) }

    static var effectiveUserID: UInt32 { c_geteuid() }

    /// The whole content of a small file such as /proc/self/mounts.
    static func readFile(_ path: String) throws(FuseError) -> [UInt8] {
        let descriptor = path.withCString { c_open($0, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else { throw FuseError.current }
        defer { _ = c_close(descriptor) }
        var content: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { c_read(descriptor, $0.baseAddress!, $0.count) }
            if count == 0 { return content }
            if count < 0 {
                if FuseError.current == .interrupted { continue }
                throw FuseError.current
            }
            content += chunk[..<count]
        }
    }

    static func unmount(_ path: String, flags: Int32) throws(FuseError) {
        let result = path.withCString { c_umount2($0, flags) }
        if result != 0 { throw FuseError.current }
    }

    /// realpath(3), or nil when a component cannot be resolved.
    static func resolvedPath(_ path: String) -> String? {
        // PATH_MAX bytes, as realpath(3) requires of a caller's buffer.
        var buffer = [CChar](repeating: 0, count: 4096)
        let resolved = buffer.withUnsafeMutableBufferPointer { buffer in
            path.withCString { c_realpath($0, buffer.baseAddress) }
        }
        guard resolved != nil else { return nil }
        return decodeCString(buffer)
    }

    static var currentDirectory: String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let directory = buffer.withUnsafeMutableBufferPointer { c_getcwd($0.baseAddress, $0.count) }
        guard directory != nil else { return nil }
        return decodeCString(buffer)
    }

    private static func decodeCString(_ buffer: [CChar]) -> String {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A NUL-terminated copy owned by the caller (free with `deallocate`).
    private static func cString(_ string: String) -> UnsafeMutablePointer<CChar> {
        let bytes = Array(string.utf8CString)
        let copy = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
        copy.initialize(from: bytes, count: bytes.count)
        return copy
    }

    /// Runs `executable` with `arguments` (argv[1...]) and waits for its exit
    /// status. The environment is minimal on purpose: the helpers we run
    /// (fusermount3) need none, and we cannot reach `environ` from here.
    static func run(_ executable: String, _ arguments: [String]) throws(FuseError) -> Int32 {
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map(cString) + [nil]
        let environment: [UnsafeMutablePointer<CChar>?] = [cString("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), nil]
        defer { for pointer in argv + environment { pointer?.deallocate() } }
        var pid: pid_t = 0
        let spawned = executable.withCString { c_posix_spawn(&pid, $0, nil, nil, argv, environment) }
        guard spawned == 0 else { throw FuseError(spawned) }
        var status: Int32 = 0
        while c_waitpid(pid, &status, 0) < 0 {
            guard FuseError.current == .interrupted else { throw FuseError.current }
        }
        // WIFEXITED / WEXITSTATUS; a child killed by a signal reports -signal.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -(status & 0x7f)
    }
}
