import Foundation

/// Per-device preferences, in the device directory: what a device backup
/// captures and a restore reverts (the generation rides it on purpose: a
/// restore must revert it so the cloud anchor can tell "rolled back"), but
/// for `cloud` and `relay`, which a restore keeps (`DeviceRestore.write`):
/// they say where the device lives now, and the anchor that tells the
/// rollback is in the current cloud folder.
public struct Prefs: Codable, Equatable, Sendable {
    public enum Role: String, Codable, Sendable { case device, homebase }

    public var formatVersion: Int = 1
    public var deviceName: String
    /// Advanced only by a committed barrier; refuses to move backward.
    public var generation: UInt64 = 0
    /// Off means this device never acks a barrier (it opted out of the cloud anchor).
    public var backupEnabled: Bool = true
    public var role: Role = .device
    /// Relay spec: "local", "local:/dir" or "redis://host:port".
    public var relay: String = "local"
    /// The cloud directory holding the anchor, if any.
    public var cloud: String? = nil
    /// Seconds a read through the mount waits for an offloaded body.
    public var recallTimeoutSeconds: Double = 10
    /// Trash and earlier versions: days kept and MiB at most (nil: the
    /// defaults, `KeptLimits`). Optional so older prefs files still load.
    public var keptDays: Int? = nil
    public var keptMebibytes: Int? = nil

    public init(deviceName: String) { self.deviceName = deviceName }
}

/// The prefs file, written atomically (temporary file, fsync, rename, fsync
/// of the directory) so a crash leaves the old or the new file, never half.
public final class PrefsFile: @unchecked Sendable {
    public let path: String
    private let lock = NSLock()

    public init(path: String) { self.path = path }

    public func load() throws(StoreError) -> Prefs {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StoreError(.notFound, "no prefs at \(path); the device directory is incomplete (run 'quire init')")
        }
        do { return try JSONDecoder().decode(Prefs.self, from: data) } catch {
            throw StoreError(.corrupt, "prefs file \(path) does not parse: \(error.localizedDescription)")
        }
    }

    public func save(_ prefs: Prefs) throws(StoreError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data: Data
        do { data = try encoder.encode(prefs) } catch { throw StoreError(.invalidInput, "prefs do not encode: \(error)") }
        try AtomicFile.write(Array(data), to: path, mode: 0o600)
    }

    /// Read-modify-write under a lock.
    @discardableResult
    public func update(_ change: (inout Prefs) throws(StoreError) -> Void) throws(StoreError) -> Prefs {
        lock.lock()
        defer { lock.unlock() }
        var prefs = try load()
        try change(&prefs)
        try save(prefs)
        return prefs
    }

    /// Records a new local generation. A generation never moves backward:
    /// a lower value is refused (it would un-see a barrier).
    public func setGeneration(_ generation: UInt64) throws(StoreError) {
        try update { (p: inout Prefs) throws(StoreError) in
            guard generation >= p.generation else {
                throw StoreError(.conflict, "refusing to move the generation backward from \(p.generation) to \(generation)")
            }
            p.generation = generation
        }
    }
}

extension PrefsFile {
    /// Takes the device back to `generation`: its replica was put back from
    /// a copy that never saw the barriers since (`replicaGeneration`).
    public func lowerGeneration(to generation: UInt64) throws(StoreError) {
        try update { (p: inout Prefs) throws(StoreError) in p.generation = min(p.generation, generation) }
    }
}

/// Durable whole-file writes, and reads that never block.
public enum AtomicFile {
    /// `replacing: false` never replaces a file already at `path` (nor one
    /// made there meanwhile): the new file is linked in, which fails if the
    /// name is taken, instead of renamed over it.
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t, replacing: Bool = true) throws(StoreError) {
        let tmp = path + ".tmp-\(getpid())"
        // O_EXCL|O_NOFOLLOW: a temporary name planted beforehand (a symlink
        // to somewhere else, in a shared folder such as /tmp) is never
        // followed; a stale one of our own pid is removed and made afresh.
        var fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        if fd < 0 && errno == EEXIST && unlink(tmp) == 0 {
            fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        }
        guard fd >= 0 else { throw posixError("cannot create \(tmp)") }
        // The mode asked for, whatever the umask.
        if fchmod(fd, mode) != 0 { let e = posixError("cannot set the mode of \(tmp)"); close(fd); unlink(tmp); throw e }
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                let e = posixError("cannot write \(tmp)")
                close(fd); unlink(tmp)
                throw e
            }
            offset += n
        }
        if fsync(fd) != 0 { let e = posixError("cannot sync \(tmp)"); close(fd); unlink(tmp); throw e }
        close(fd)
        if replacing {
            if rename(tmp, path) != 0 { let e = posixError("cannot replace \(path)"); unlink(tmp); throw e }
        } else if link(tmp, path) != 0 {
            let code = errno
            // A disk with no hard links (FAT and exFAT sticks, some network
            // folders): checked, then renamed; only a file made in between
            // could still be replaced.
            let noLinks = code == EPERM || code == ENOTSUP || code == EOPNOTSUPP || code == ENOSYS || code == EMLINK
            var st = stat()
            if code == EEXIST || (noLinks && lstat(path, &st) == 0) {
                unlink(tmp)
                throw StoreError(.conflict, "\(path) already exists; it was not replaced")
            }
            if !noLinks { errno = code; let e = posixError("cannot create \(path)"); unlink(tmp); throw e }
            if rename(tmp, path) != 0 { let e = posixError("cannot create \(path)"); unlink(tmp); throw e }
        } else {
            unlink(tmp)
        }
        let dir = parentDirectory(of: path)
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 { fsync(dfd); close(dfd) }
    }

    /// Reads a regular file, at most `limit` bytes from its start. Anything
    /// else under that name (a FIFO, a device, a folder) is refused without
    /// blocking: folders other programs write to, such as a cloud folder,
    /// may hold anything, and a FIFO would stall its reader forever.
    public static func readRegular(_ path: String, upTo limit: Int = .max) throws(StoreError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw StoreError(.notFound, "\(path) does not exist") }
            throw posixError("cannot open \(path)")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw posixError("cannot read \(path)") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw StoreError(.corrupt, "\(path) is not a regular file; it is not read") }
        var bytes = [UInt8](repeating: 0, count: min(limit, max(0, Int(info.st_size))))
        var filled = 0
        while true {
            if filled == bytes.count {
                guard bytes.count < limit else { break }
                bytes += [UInt8](repeating: 0, count: min(limit - bytes.count, 64 << 10))   // grew since fstat
            }
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 {
                if errno == EINTR { continue }
                throw posixError("cannot read \(path)")
            }
            if n == 0 { break }
            filled += n
        }
        return Array(bytes[..<filled])
    }

    static func posixError(_ what: String) -> StoreError {
        let code = errno
        let reason = String(cString: strerror(code))
        switch code {
        case ENOSPC, EDQUOT, EFBIG: return StoreError(.diskFull, "\(what): \(reason); nothing was changed, free some space and retry")
        case EACCES, EPERM: return StoreError(.permission, "\(what): \(reason)")
        case EROFS: return StoreError(.readOnly, "\(what): \(reason)")
        default: return StoreError(.sqlite(-1), "\(what): \(reason)")
        }
    }
}

/// The folder holding `path` ("." for a bare name, "/" for a top-level
/// one). Not NSString.deletingLastPathComponent, which crashes on a
/// one-character relative name in swift-corelibs-foundation.
public func parentDirectory(of path: String) -> String {
    var trimmed = Substring(path)
    while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
    guard let slash = trimmed.lastIndex(of: "/") else { return "." }
    return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
}
