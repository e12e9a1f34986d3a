import Glibc
import QuireFuse

/// Editor junk and other files that are not rows live here, in the device
/// directory's scratch folder (one subfolder per mount folder): ordinary
/// local files, usable like any other, never rows and never synced.
///
/// Their names on disk are NFC (`CanonicalName`), like every name in the
/// mount, so `.x.md.swp` typed in NFD finds the swap file made in NFC.
struct ScratchArea: Sendable {
    let root: String
    static let folders: [Folder] = [.root] + MountLayout.namespaces.map { Folder.namespace($0) }

    func directory(_ folder: Folder) -> String { root + "/" + folder.scratchDirectoryName }

    func path(_ folder: Folder, _ name: CanonicalName) -> String { directory(folder) + "/" + name.text }

    /// Makes the folders, and renames files an older build kept under a
    /// name that is not NFC to their NFC name. A file whose NFC twin exists
    /// too is kept as `<name>.nfd` (then `.nfd2`, ...); returns a line for each.
    func prepare() throws(FuseError) -> [String] {
        for directory in [root] + Self.folders.map(directory) {
            if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw FuseError(errno) }
        }
        var notes: [String] = []
        for folder in Self.folders {
            for raw in rawNames(folder) where !CanonicalName.isCanonical(raw) {
                let canonical = CanonicalName(raw)
                var target = canonical
                var attempt = 1
                while access(path(folder, target), F_OK) == 0 {
                    target = canonical.appending(attempt == 1 ? ".nfd" : ".nfd\(attempt)")
                    attempt += 1
                }
                if Glibc.rename(directory(folder) + "/" + raw, path(folder, target)) != 0 {
                    notes.append("the local file \(folder.scratchDirectoryName)/\(target) (not NFC on disk) could not be renamed to NFC: \(String(cString: strerror(errno)))")
                } else if target != canonical {
                    notes.append("two local files in \(folder.scratchDirectoryName) were both named \(canonical) (in NFC and another form); one is now \(target)")
                }
            }
        }
        return notes
    }

    func status(_ folder: Folder, _ name: CanonicalName) -> stat? { status(path: path(folder, name)) }

    /// A scratch file's modification time in nanoseconds since 1970.
    func modificationTime(_ folder: Folder, _ name: CanonicalName) -> Int64? {
        guard let info = status(folder, name) else { return nil }
        return Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }

    private func status(path: String) -> stat? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return info
    }

    /// The regular files of a folder's scratch directory.
    func names(_ folder: Folder) -> [CanonicalName] {
        var names = Set<CanonicalName>()
        for raw in rawNames(folder) where status(path: directory(folder) + "/" + raw) != nil {
            names.insert(CanonicalName(raw))
        }
        return names.sorted()
    }

    /// The names in a folder's scratch directory, as they are on disk.
    private func rawNames(_ folder: Folder) -> [String] {
        guard let directory = opendir(directory(folder)) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name == "." || name == ".." { continue }
            names.append(name)
        }
        return names
    }

    func open(_ folder: Folder, _ name: CanonicalName, flags: Int32, mode: mode_t = 0o644) throws(FuseError) -> Int32 {
        if flags & O_CREAT != 0 { try makeDirectory(folder) }
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

    func contents(_ folder: Folder, _ name: CanonicalName) throws(FuseError) -> [UInt8] {
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
    func replaceContents(_ folder: Folder, _ name: CanonicalName, with bytes: [UInt8]) throws(FuseError) {
        let descriptor = try open(folder, name, flags: O_WRONLY | O_CREAT | O_TRUNC)
        defer { close(descriptor) }
        var offset = 0
        while offset < bytes.count {
            let written = try write(descriptor, offset: UInt64(offset), data: Array(bytes[offset...]))
            offset += written
        }
        fsync(descriptor)
    }

    /// A notebook folder's scratch directory is made when a first file
    /// goes there (the fixed ones at `prepare`).
    func makeDirectory(_ folder: Folder) throws(FuseError) {
        guard case .subfolder = folder else { return }
        if mkdir(directory(folder), 0o700) != 0 && errno != EEXIST { throw FuseError(errno) }
    }

    /// A removed notebook folder's scratch directory (empty by then).
    func removeDirectory(_ folder: Folder) {
        guard case .subfolder = folder else { return }
        rmdir(directory(folder))
    }

    func remove(_ folder: Folder, _ name: CanonicalName) throws(FuseError) {
        if unlink(path(folder, name)) != 0 { throw FuseError(errno) }
    }

    func rename(_ from: (Folder, CanonicalName), _ to: (Folder, CanonicalName), flags: UInt32) throws(FuseError) {
        try makeDirectory(to.0)
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
