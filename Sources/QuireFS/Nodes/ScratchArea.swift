import Glibc
import QuireFuse

/// Editor junk and other files that are not rows live here, in the device
/// directory's scratch folder (one subfolder per mount folder): ordinary
/// local files, usable like any other, never rows and never synced.
struct ScratchArea: Sendable {
    let root: String

    func directory(_ folder: Folder) -> String { root + "/" + folder.scratchDirectoryName }

    func path(_ folder: Folder, _ name: String) -> String { directory(folder) + "/" + name }

    func prepare() throws(FuseError) {
        for directory in [root] + ([Folder.root] + MountLayout.namespaces.map { Folder.namespace($0) }).map(directory) {
            if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw FuseError(errno) }
        }
    }

    func status(_ folder: Folder, _ name: String) -> stat? {
        var info = stat()
        guard lstat(path(folder, name), &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return info
    }

    /// The regular files of a folder's scratch directory.
    func names(_ folder: Folder) -> [String] {
        guard let directory = opendir(directory(folder)) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name == "." || name == ".." { continue }
            if status(folder, name) != nil { names.append(name) }
        }
        return names.sorted()
    }

    func open(_ folder: Folder, _ name: String, flags: Int32, mode: mode_t = 0o644) throws(FuseError) -> Int32 {
        let descriptor = Glibc.open(path(folder, name), flags | O_CLOEXEC | O_NOFOLLOW, mode)
        guard descriptor >= 0 else { throw FuseError(errno) }
        return descriptor
    }

    func read(_ descriptor: Int32, offset: UInt64, size: Int) throws(FuseError) -> [UInt8] {
        // Read straight into the array's storage: no zeroing, no copy.
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            let count = pread(descriptor, buffer.baseAddress, size, off_t(offset))
            if count < 0 { failure = errno }
            initialized = max(count, 0)
        }
        guard failure == 0 else { throw FuseError(failure) }
        return bytes
    }

    func write(_ descriptor: Int32, offset: UInt64, data: [UInt8]) throws(FuseError) -> Int {
        let count = data.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, data.count, off_t(offset)) }
        guard count >= 0 else { throw FuseError(errno) }
        return count
    }

    func contents(_ folder: Folder, _ name: String) throws(FuseError) -> [UInt8] {
        let descriptor = try open(folder, name, flags: O_RDONLY)
        defer { close(descriptor) }
        var content: [UInt8] = []
        while true {
            let chunk = try read(descriptor, offset: UInt64(content.count), size: 64 * 1024)
            if chunk.isEmpty { return content }
            content += chunk
        }
    }

    /// Replaces a scratch file's content (creating it), durably enough for
    /// a file that holds text a user must not lose.
    func replaceContents(_ folder: Folder, _ name: String, with bytes: [UInt8]) throws(FuseError) {
        let descriptor = try open(folder, name, flags: O_WRONLY | O_CREAT | O_TRUNC)
        defer { close(descriptor) }
        var offset = 0
        while offset < bytes.count {
            let written = try write(descriptor, offset: UInt64(offset), data: Array(bytes[offset...]))
            offset += written
        }
        fsync(descriptor)
    }

    func remove(_ folder: Folder, _ name: String) throws(FuseError) {
        if unlink(path(folder, name)) != 0 { throw FuseError(errno) }
    }

    func rename(_ from: (Folder, String), _ to: (Folder, String), flags: UInt32) throws(FuseError) {
        let source = path(from.0, from.1), target = path(to.0, to.1)
        let result: Int32 = flags == 0 ? Glibc.rename(source, target) : LibC.renameat2(source, target, flags)
        if result != 0 { throw FuseError(errno) }
    }
}

/// libc calls the Glibc module does not declare, found at run time.
enum LibC {
    private typealias Renameat2 = @convention(c) (Int32, UnsafePointer<CChar>?, Int32, UnsafePointer<CChar>?, UInt32) -> Int32

    static func renameat2(_ from: String, _ to: String, _ flags: UInt32) -> Int32 {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") else {
            errno = ENOSYS
            return -1
        }
        return unsafeBitCast(address, to: Renameat2.self)(AT_FDCWD, from, AT_FDCWD, to, flags)
    }
}
