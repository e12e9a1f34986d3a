import Foundation
import XCTest

/// A fresh device mounted with the real `quire mount` (daemonized), and
/// always unmounted again.
final class MountedDevice {
    let directory: String
    let home: String
    let mountpoint: String

    init(name: String = #function, options: [String] = ["-o", "nosync"], populate: (String) throws -> Void = { _ in }) throws {
        directory = makeTemporaryDirectory(name)
        home = directory + "/home"
        mountpoint = directory + "/mnt"
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        let initialized = try quire(["init", "--name", "mount-test"], home: home)
        XCTAssertEqual(initialized.status, 0, initialized.stderr)
        try populate(home)
        try mount(options)
    }

    func mount(_ options: [String] = ["-o", "nosync"]) throws {
        let result = try quire(["mount", mountpoint] + options, home: home)
        guard result.status == 0 else { throw MountTestError("mount failed: \(result.stderr)") }
    }

    func unmount() throws -> RunResult { try quire(["unmount", mountpoint], home: home) }

    /// Unmounts whatever state the test left behind, then removes the files.
    func close() {
        if isMounted {
            _ = try? unmount()
            if isMounted { shell("fusermount3 -u -z '\(mountpoint)'") }
        }
        if let pid = daemonPID { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(atPath: directory)
    }

    var isMounted: Bool {
        let table = (try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? ""
        return table.split(separator: "\n").contains { $0.split(separator: " ").dropFirst().first == Substring(mountpoint) }
    }

    /// The daemon's pid, from the pid file `quire mount` writes.
    var daemonPID: pid_t? {
        guard let files = try? FileManager.default.contentsOfDirectory(atPath: home + "/mounts") else { return nil }
        for file in files where file.hasSuffix(".pid") {
            let text = (try? String(contentsOfFile: home + "/mounts/" + file, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n")
            if lines.count >= 2, lines[1] == Substring(mountpoint), let pid = pid_t(lines[0]) { return pid }
        }
        return nil
    }

    func path(_ relative: String) -> String { mountpoint + "/" + relative }

    func read(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path(relative))))
    }

    func text(_ relative: String) throws -> String { String(decoding: try read(relative), as: UTF8.self) }

    /// `quire ls NS --tombstones --json` as (key, name, tombstone).
    func rows(_ namespace: String) throws -> [(key: String, name: String, isTombstone: Bool)] {
        let result = try quire(["ls", namespace, "--tombstones", "--json"], home: home)
        XCTAssertEqual(result.status, 0, result.stderr)
        return (try jsonObject(result.stdout) as! [[String: Any]]).map {
            ($0["key"] as! String, $0["name"] as! String, $0["tombstone"] as! Bool)
        }
    }

    /// The version vector text of a row (`{device:counter}`).
    func version(_ namespace: String, key: String) throws -> String {
        let result = try quire(["get", namespace, "--key", key, "--json"], home: home)
        XCTAssertEqual(result.status, 0, result.stderr)
        return (try jsonObject(result.stdout) as! [String: Any])["version"] as! String
    }
}

struct MountTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// System calls with their errno, so tests can check exactly what a
/// program would see (close() failing, renameat2 flags, xattrs).
enum Syscall {
    private static func symbol<T>(_ name: String, as type: T.Type) -> T {
        unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0), name)!, to: type)
    }

    /// open, one write per chunk, close; returns the errno of the first
    /// failing step (0: all succeeded) and which step it was.
    @discardableResult
    static func writeFile(_ path: String, chunks: [[UInt8]], flags: Int32 = O_WRONLY | O_CREAT | O_TRUNC,
                          fsyncBeforeClose: Bool = false) -> (errno: Int32, step: String) {
        let descriptor = open(path, flags, 0o644)
        guard descriptor >= 0 else { return (errno, "open") }
        for chunk in chunks {
            let written = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written != chunk.count { let e = errno; close(descriptor); return (e, "write") }
        }
        if fsyncBeforeClose && fsync(descriptor) != 0 { let e = errno; close(descriptor); return (e, "fsync") }
        return close(descriptor) == 0 ? (0, "") : (errno, "close")
    }

    static func writeFile(_ path: String, _ text: String, flags: Int32 = O_WRONLY | O_CREAT | O_TRUNC) -> (errno: Int32, step: String) {
        writeFile(path, chunks: [Array(text.utf8)], flags: flags)
    }

    typealias Renameat2 = @convention(c) (Int32, UnsafePointer<CChar>?, Int32, UnsafePointer<CChar>?, UInt32) -> Int32
    static let noReplace: UInt32 = 1
    static let exchange: UInt32 = 2

    static func rename(_ from: String, _ to: String, flags: UInt32 = 0) -> Int32 {
        symbol("renameat2", as: Renameat2.self)(AT_FDCWD, from, AT_FDCWD, to, flags) == 0 ? 0 : errno
    }

    typealias Getxattr = @convention(c) (UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeMutableRawPointer?, Int) -> Int
    typealias Setxattr = @convention(c) (UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeRawPointer?, Int, Int32) -> Int32

    static func attribute(_ path: String, _ name: String) -> (errno: Int32, value: String) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { symbol("getxattr", as: Getxattr.self)(path, name, $0.baseAddress, $0.count) }
        return count < 0 ? (errno, "") : (0, String(decoding: buffer.prefix(count), as: UTF8.self))
    }

    static func setAttribute(_ path: String, _ name: String, _ value: String) -> Int32 {
        let bytes = Array(value.utf8)
        return bytes.withUnsafeBytes { symbol("setxattr", as: Setxattr.self)(path, name, $0.baseAddress, $0.count, 0) } == 0 ? 0 : errno
    }

    /// stat: (inode, size, mtime) or nil.
    static func status(_ path: String) -> (inode: UInt64, size: Int, modified: Int)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_ino), Int(info.st_size), Int(info.st_mtim.tv_sec))
    }
}

/// Waits up to `timeout` seconds for `condition`.
func eventually(_ timeout: TimeInterval = 1, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
