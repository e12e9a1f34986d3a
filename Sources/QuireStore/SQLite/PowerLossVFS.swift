import CSQLite
import Foundation

/// A disk that can lose power, as an SQLite VFS (the way SQLite's own crash
/// tests work). Every file a connection opens on it (database, `-wal`,
/// rollback journal) is the default unix VFS's file underneath, so reads,
/// locks and the WAL's shared memory behave as usual; in addition the disk
/// remembers, per file, what the last `xSync` of that file made durable.
///
/// The model, which is the one a journaling file system gives:
/// - a write (or a truncate) lands in the page cache at once: every reader
///   sees it, and it stays there when the file is closed;
/// - `xSync` of a file (fsync) makes that file's whole current content
///   durable, whichever handle wrote it;
/// - `powerLoss()` puts every file back to exactly what its last `xSync`
///   left (a file never synced since it was created goes back to empty),
///   and kills every file open at that moment, as a power cut kills the
///   process: their reads, writes, syncs and locks fail from then on, and
///   the disk opens and deletes nothing more until all of them are closed.
///   Then a new connection recovers from what survived, as after a reboot.
///
/// Not modelled (documented simplifications): directory entries (creating
/// and deleting a file are durable at once), the `-shm` wal-index (it is not
/// data: SQLite rebuilds it from the WAL after a crash, and the disk forwards
/// it untouched), torn or reordered writes (all unsynced writes of a file
/// are lost together), other processes, and connections opened on the same
/// files through another VFS. A file the disk first opens is taken to be
/// durable as it stands.
///
/// Use: `ReplicaStore(path:..., vfs: disk)`; drop every store and connection
/// opened before `powerLoss()`, then open them again. Each disk registers
/// its own VFS name, so several (one per simulated device) coexist.
public final class PowerLossDisk: @unchecked Sendable {
    /// The VFS name this disk is registered under.
    public let name: String
    let core: PowerLossCore
    private let vfs: UnsafeMutablePointer<sqlite3_vfs>
    private let vfsName: UnsafeMutablePointer<CChar>

    /// `forwardsSync: false` models each sync without paying for a real
    /// fsync (for simulations that want speed); the real files are then only
    /// as durable as the machine makes them, but the model is unchanged.
    public init(forwardsSync: Bool = true) {
        guard let real = sqlite3_vfs_find(nil) else { preconditionFailure("SQLite has no default VFS") }
        name = "quire-powerloss-\(UUID().uuidString.prefix(8).lowercased())"
        vfsName = strdup(name)!
        core = PowerLossCore(real: real, forwardsSync: forwardsSync)
        vfs = UnsafeMutablePointer<sqlite3_vfs>.allocate(capacity: 1)
        vfs.initialize(to: sqlite3_vfs())
        vfs.pointee.iVersion = 2
        vfs.pointee.szOsFile = Int32(PowerLossLayout.realOffset) + real.pointee.szOsFile
        vfs.pointee.mxPathname = real.pointee.mxPathname
        vfs.pointee.zName = UnsafePointer(vfsName)
        vfs.pointee.pAppData = Unmanaged.passUnretained(core).toOpaque()
        vfs.pointee.xOpen = plOpen
        vfs.pointee.xDelete = plDelete
        vfs.pointee.xAccess = { v, name, flags, out in realVFS(v).pointee.xAccess!(realVFS(v), name, flags, out) }
        vfs.pointee.xFullPathname = { v, name, n, out in realVFS(v).pointee.xFullPathname!(realVFS(v), name, n, out) }
        vfs.pointee.xDlOpen = { v, name in realVFS(v).pointee.xDlOpen!(realVFS(v), name) }
        vfs.pointee.xDlError = { v, n, out in realVFS(v).pointee.xDlError!(realVFS(v), n, out) }
        vfs.pointee.xDlSym = { v, handle, symbol in realVFS(v).pointee.xDlSym!(realVFS(v), handle, symbol) }
        vfs.pointee.xDlClose = { v, handle in realVFS(v).pointee.xDlClose!(realVFS(v), handle) }
        vfs.pointee.xRandomness = { v, n, out in realVFS(v).pointee.xRandomness!(realVFS(v), n, out) }
        vfs.pointee.xSleep = { v, us in realVFS(v).pointee.xSleep!(realVFS(v), us) }
        vfs.pointee.xCurrentTime = { v, out in realVFS(v).pointee.xCurrentTime!(realVFS(v), out) }
        vfs.pointee.xGetLastError = { v, n, out in realVFS(v).pointee.xGetLastError!(realVFS(v), n, out) }
        vfs.pointee.xCurrentTimeInt64 = { v, out in
            let real = realVFS(v)
            if real.pointee.iVersion >= 2, let now = real.pointee.xCurrentTimeInt64 { return now(real, out) }
            var days = 0.0
            let rc = real.pointee.xCurrentTime!(real, &days)
            out?.pointee = sqlite3_int64(days * 86_400_000)
            return rc
        }
        sqlite3_vfs_register(vfs, 0)
    }

    deinit {
        // Every connection on this disk holds the disk, so no file should be
        // open now; if SQLite still holds one (a close it deferred), the VFS
        // is left registered rather than freed under it.
        if core.withLock({ core.liveOpen + core.deadOpen }) > 0 { return }
        sqlite3_vfs_unregister(vfs)
        vfs.deinitialize(count: 1)
        vfs.deallocate()
        free(vfsName)
    }

    /// Cuts the power: every write and truncate not made durable by a sync
    /// of its file is undone, and every file open now is dead (see the type).
    public func powerLoss() throws(StoreError) {
        try core.powerLoss()
    }

    /// Bytes written (or cut by truncation) since the last sync of their
    /// file, summed over files: what a power cut now would lose, at most.
    public var unsyncedBytes: Int { core.withLock { core.images.values.reduce(0) { $0 + $1.unsynced } } }

    /// The same per file (full path as SQLite names it), for files with any.
    public var unsyncedFiles: [String: Int] {
        core.withLock { core.images.filter { $0.value.unsynced > 0 }.mapValues(\.unsynced) }
    }

    /// How many syncs (fsyncs) files on this disk have asked for.
    public var syncCount: Int { core.withLock { core.syncCount } }

    /// Files opened before the last power cut and not closed yet; while
    /// there are any, the disk refuses to open or delete files.
    public var deadFilesOpen: Int { core.withLock { core.deadOpen } }
}

// MARK: - State

/// The shared state of one disk, behind one lock (the callbacks come in on
/// whichever thread runs SQLite).
final class PowerLossCore: @unchecked Sendable {
    let real: UnsafeMutablePointer<sqlite3_vfs>
    let forwardsSync: Bool
    let methods: UnsafeMutablePointer<sqlite3_io_methods>
    private let lock = NSLock()
    /// Files with an open handle or unsynced changes, by SQLite's full path.
    var images: [String: FileImage] = [:]
    /// Advanced by each power cut; a file opened in an earlier epoch is dead.
    var epoch = 0
    /// Files opened since the last power cut and not closed yet.
    var liveOpen = 0
    /// Files opened before it and not closed yet.
    var deadOpen = 0
    var syncCount = 0

    init(real: UnsafeMutablePointer<sqlite3_vfs>, forwardsSync: Bool) {
        self.real = real
        self.forwardsSync = forwardsSync
        methods = UnsafeMutablePointer<sqlite3_io_methods>.allocate(capacity: 1)
        methods.initialize(to: PowerLossLayout.ioMethods())
    }

    deinit {
        methods.deinitialize(count: 1)
        methods.deallocate()
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    func powerLoss() throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        epoch += 1
        // Everything open now belongs to the process the power cut killed.
        deadOpen += liveOpen
        liveOpen = 0
        var failures: [String] = []
        for image in images.values where image.isDirty {
            if let failure = restore(image) { failures.append(failure) }
        }
        images.removeAll()
        if !failures.isEmpty {
            throw StoreError(.sqlite(SQLITE_IOERR), "power loss could not put files back: " + failures.joined(separator: "; "))
        }
    }

    /// Writes the saved durable blocks back and cuts the file to its durable
    /// size, through a fresh handle of the underlying VFS.
    private func restore(_ image: FileImage) -> String? {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: Int(real.pointee.szOsFile), alignment: 16)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: Int(real.pointee.szOsFile))
        let file = buffer.bindMemory(to: sqlite3_file.self, capacity: 1)
        guard let path = strdup(image.path) else { return "\(image.path): out of memory" }
        defer { free(path) }
        var outFlags: Int32 = 0
        // Not URI: this name is a plain C string with no parameters after it.
        let flags = (image.openFlags & ~(SQLITE_OPEN_EXCLUSIVE | SQLITE_OPEN_DELETEONCLOSE | SQLITE_OPEN_READONLY | SQLITE_OPEN_URI))
            | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        var rc = real.pointee.xOpen!(real, path, file, flags, &outFlags)
        guard rc == SQLITE_OK, let io = file.pointee.pMethods else {
            if let io = file.pointee.pMethods { _ = io.pointee.xClose!(file) }
            return "\(image.path): cannot open (SQLite code \(rc))"
        }
        defer { _ = io.pointee.xClose!(file) }
        for (block, bytes) in image.saved where !bytes.isEmpty {
            rc = bytes.withUnsafeBytes { io.pointee.xWrite!(file, $0.baseAddress, Int32($0.count), block * FileImage.blockSize) }
            if rc != SQLITE_OK { return "\(image.path): cannot write back (SQLite code \(rc))" }
        }
        rc = io.pointee.xTruncate!(file, image.syncedSize)
        if rc != SQLITE_OK { return "\(image.path): cannot truncate (SQLite code \(rc))" }
        return nil
    }
}

/// What the disk knows of one file: its durable size and, for each block
/// changed since the last sync, the block's durable bytes (saved before the
/// first write or truncate that touched it).
final class FileImage {
    static let blockSize: Int64 = 4096
    let path: String
    let openFlags: Int32
    var syncedSize: Int64
    var saved: [Int64: [UInt8]] = [:]
    var unsynced = 0
    var sizeChanged = false
    var openCount = 0

    init(path: String, openFlags: Int32, syncedSize: Int64) {
        self.path = path
        self.openFlags = openFlags
        self.syncedSize = syncedSize
    }

    var isDirty: Bool { !saved.isEmpty || sizeChanged || unsynced > 0 }

    /// Saves the durable bytes of every block in [from, to) not saved yet.
    /// A block not saved is unchanged since the last sync, so the file holds
    /// its durable bytes now.
    func saveDurable(from: Int64, to: Int64, reading file: UnsafeMutablePointer<sqlite3_file>,
                     _ io: UnsafePointer<sqlite3_io_methods>) -> Int32 {
        let end = min(to, syncedSize)
        guard from < end else { return SQLITE_OK }
        var block = from / Self.blockSize
        while block * Self.blockSize < end {
            if saved[block] == nil {
                let start = block * Self.blockSize
                let count = Int(min(start + Self.blockSize, syncedSize) - start)
                var bytes = [UInt8](repeating: 0, count: count)
                let rc = bytes.withUnsafeMutableBytes { io.pointee.xRead!(file, $0.baseAddress, Int32(count), start) }
                if rc != SQLITE_OK && rc != ioerrShortRead { return rc }
                saved[block] = bytes
            }
            block += 1
        }
        return SQLITE_OK
    }
}

/// One open file: the underlying file lives in the same allocation, after
/// the sqlite3_file header and a pointer to this object.
final class OpenFile {
    let core: PowerLossCore
    let real: UnsafeMutablePointer<sqlite3_file>
    let io: UnsafePointer<sqlite3_io_methods>
    let image: FileImage?
    let epoch: Int

    init(core: PowerLossCore, real: UnsafeMutablePointer<sqlite3_file>, io: UnsafePointer<sqlite3_io_methods>, image: FileImage?, epoch: Int) {
        self.core = core
        self.real = real
        self.io = io
        self.image = image
        self.epoch = epoch
    }

    /// Opened before the last power cut (call under the core's lock).
    var isDead: Bool { epoch != core.epoch }
}

// MARK: - Callbacks

// Extended result codes (sqlite3.h), spelled out: Swift does not import
// the macros that build them.
private let ioerrShortRead: Int32 = SQLITE_IOERR | (2 << 8)
private let ioerrRead: Int32 = SQLITE_IOERR | (1 << 8)
private let ioerrWrite: Int32 = SQLITE_IOERR | (3 << 8)
private let ioerrFsync: Int32 = SQLITE_IOERR | (4 << 8)
private let ioerrTruncate: Int32 = SQLITE_IOERR | (6 << 8)
private let ioerrFstat: Int32 = SQLITE_IOERR | (7 << 8)
private let ioerrDelete: Int32 = SQLITE_IOERR | (10 << 8)
private let ioerrDeleteNoEntry: Int32 = SQLITE_IOERR | (23 << 8)
private let ioerrLock: Int32 = SQLITE_IOERR | (15 << 8)
private let ioerrCheckReservedLock: Int32 = SQLITE_IOERR | (14 << 8)
private let ioerrShmMap: Int32 = SQLITE_IOERR | (21 << 8)
private let ioerrShmLock: Int32 = SQLITE_IOERR | (20 << 8)

enum PowerLossLayout {
    /// sqlite3_file (the methods pointer), then the OpenFile pointer, then
    /// the underlying VFS's file, 16-byte aligned.
    static let stateOffset = MemoryLayout<sqlite3_file>.stride
    static let realOffset = (stateOffset + MemoryLayout<UnsafeRawPointer>.stride + 15) / 16 * 16

    static func ioMethods() -> sqlite3_io_methods {
        var m = sqlite3_io_methods()
        // Version 2: shared memory (WAL) but no xFetch, so SQLite never maps
        // the database and every read and write goes through here.
        m.iVersion = 2
        m.xClose = plClose
        m.xRead = plRead
        m.xWrite = plWrite
        m.xTruncate = plTruncate
        m.xSync = plSync
        m.xFileSize = { f, size in
            let s = state(f)
            if s.core.withLock({ s.isDead }) { return ioerrFstat }
            return s.io.pointee.xFileSize!(s.real, size)
        }
        m.xLock = { f, level in
            let s = state(f)
            if s.core.withLock({ s.isDead }) { return ioerrLock }
            return s.io.pointee.xLock!(s.real, level)
        }
        m.xUnlock = { f, level in let s = state(f); return s.io.pointee.xUnlock!(s.real, level) }
        m.xCheckReservedLock = { f, out in
            let s = state(f)
            if s.core.withLock({ s.isDead }) { return ioerrCheckReservedLock }
            return s.io.pointee.xCheckReservedLock!(s.real, out)
        }
        m.xFileControl = { f, op, arg in let s = state(f); return s.io.pointee.xFileControl!(s.real, op, arg) }
        m.xSectorSize = { f in let s = state(f); return s.io.pointee.xSectorSize!(s.real) }
        m.xDeviceCharacteristics = { f in let s = state(f); return s.io.pointee.xDeviceCharacteristics!(s.real) }
        m.xShmMap = { f, page, size, extend, out in
            let s = state(f)
            guard s.io.pointee.iVersion >= 2, let map = s.io.pointee.xShmMap else { return ioerrShmMap }
            if s.core.withLock({ s.isDead }) { return ioerrShmMap }
            return map(s.real, page, size, extend, out)
        }
        m.xShmLock = { f, offset, n, flags in
            let s = state(f)
            guard s.io.pointee.iVersion >= 2, let lock = s.io.pointee.xShmLock else { return ioerrShmLock }
            if flags & SQLITE_SHM_LOCK != 0, s.core.withLock({ s.isDead }) { return ioerrShmLock }
            return lock(s.real, offset, n, flags)
        }
        m.xShmBarrier = { f in
            let s = state(f)
            if s.io.pointee.iVersion >= 2, let barrier = s.io.pointee.xShmBarrier { barrier(s.real) }
        }
        m.xShmUnmap = { f, delete in
            let s = state(f)
            guard s.io.pointee.iVersion >= 2, let unmap = s.io.pointee.xShmUnmap else { return SQLITE_OK }
            // A dead connection never deletes the wal-index: the next opener recovers.
            return unmap(s.real, s.core.withLock { s.isDead } ? 0 : delete)
        }
        return m
    }
}

private func realVFS(_ vfs: UnsafeMutablePointer<sqlite3_vfs>?) -> UnsafeMutablePointer<sqlite3_vfs> {
    core(vfs).real
}

private func core(_ vfs: UnsafeMutablePointer<sqlite3_vfs>?) -> PowerLossCore {
    Unmanaged<PowerLossCore>.fromOpaque(vfs!.pointee.pAppData).takeUnretainedValue()
}

private func state(_ file: UnsafeMutablePointer<sqlite3_file>?) -> OpenFile {
    let pointer = UnsafeMutableRawPointer(file!).load(fromByteOffset: PowerLossLayout.stateOffset, as: UnsafeMutableRawPointer.self)
    return Unmanaged<OpenFile>.fromOpaque(pointer).takeUnretainedValue()
}

private func plOpen(_ vfs: UnsafeMutablePointer<sqlite3_vfs>?, _ name: sqlite3_filename?, _ file: UnsafeMutablePointer<sqlite3_file>?,
                    _ flags: Int32, _ outFlags: UnsafeMutablePointer<Int32>?) -> Int32 {
    let core = core(vfs)
    guard let file else { return SQLITE_MISUSE }
    file.pointee.pMethods = nil
    guard let epoch = core.withLock({ core.deadOpen > 0 ? nil : core.epoch }) else { return SQLITE_CANTOPEN }
    let raw = UnsafeMutableRawPointer(file)
    let real = (raw + PowerLossLayout.realOffset).bindMemory(to: sqlite3_file.self, capacity: 1)
    real.pointee.pMethods = nil
    let rc = core.real.pointee.xOpen!(core.real, name, real, flags, outFlags)
    guard rc == SQLITE_OK, let io = real.pointee.pMethods else {
        if let io = real.pointee.pMethods { _ = io.pointee.xClose!(real) }
        return rc == SQLITE_OK ? SQLITE_CANTOPEN : rc
    }
    var size: sqlite3_int64 = 0
    let tracked = name != nil && flags & SQLITE_OPEN_DELETEONCLOSE == 0
    if tracked && io.pointee.xFileSize!(real, &size) != SQLITE_OK { size = 0 }
    let open: OpenFile = core.withLock {
        var image: FileImage? = nil
        if core.epoch != epoch {
            // The power went while this file was being opened: dead already.
            core.deadOpen += 1
            return OpenFile(core: core, real: real, io: io, image: nil, epoch: epoch)
        }
        if tracked, let name {
            let path = String(cString: name)
            let known = core.images[path] ?? FileImage(path: path, openFlags: flags, syncedSize: size)
            core.images[path] = known
            known.openCount += 1
            image = known
        }
        core.liveOpen += 1
        return OpenFile(core: core, real: real, io: io, image: image, epoch: core.epoch)
    }
    raw.storeBytes(of: Unmanaged.passRetained(open).toOpaque(), toByteOffset: PowerLossLayout.stateOffset, as: UnsafeMutableRawPointer.self)
    file.pointee.pMethods = UnsafePointer(core.methods)
    return SQLITE_OK
}

private func plDelete(_ vfs: UnsafeMutablePointer<sqlite3_vfs>?, _ name: UnsafePointer<CChar>?, _ syncDirectory: Int32) -> Int32 {
    let core = core(vfs)
    return core.withLock {
        // A dead process deletes nothing (a hot journal must survive it).
        if core.deadOpen > 0 { return ioerrDelete }
        let rc = core.real.pointee.xDelete!(core.real, name, syncDirectory)
        if let name, rc == SQLITE_OK || rc == ioerrDeleteNoEntry {
            core.images[String(cString: name)] = nil
        }
        return rc
    }
}

private func plClose(_ file: UnsafeMutablePointer<sqlite3_file>?) -> Int32 {
    let s = state(file)
    let rc = s.io.pointee.xClose!(s.real)
    s.core.withLock {
        if s.isDead {
            s.core.deadOpen -= 1
        } else {
            s.core.liveOpen -= 1
            if let image = s.image {
                image.openCount -= 1
                // A closed file keeps its unsynced writes (in the page cache).
                if image.openCount == 0 && !image.isDirty && s.core.images[image.path] === image {
                    s.core.images[image.path] = nil
                }
            }
        }
    }
    let pointer = UnsafeMutableRawPointer(file!).load(fromByteOffset: PowerLossLayout.stateOffset, as: UnsafeMutableRawPointer.self)
    Unmanaged<OpenFile>.fromOpaque(pointer).release()
    file!.pointee.pMethods = nil
    return rc
}

private func plRead(_ file: UnsafeMutablePointer<sqlite3_file>?, _ buffer: UnsafeMutableRawPointer?, _ amount: Int32, _ offset: sqlite3_int64) -> Int32 {
    let s = state(file)
    if s.core.withLock({ s.isDead }) { return ioerrRead }
    return s.io.pointee.xRead!(s.real, buffer, amount, offset)
}

private func plWrite(_ file: UnsafeMutablePointer<sqlite3_file>?, _ buffer: UnsafeRawPointer?, _ amount: Int32, _ offset: sqlite3_int64) -> Int32 {
    let s = state(file)
    return s.core.withLock {
        if s.isDead { return ioerrWrite }
        if let image = s.image {
            let rc = image.saveDurable(from: offset, to: offset + sqlite3_int64(amount), reading: s.real, s.io)
            if rc != SQLITE_OK { return rc }
            image.unsynced += Int(amount)
            if offset + sqlite3_int64(amount) > image.syncedSize { image.sizeChanged = true }
        }
        return s.io.pointee.xWrite!(s.real, buffer, amount, offset)
    }
}

private func plTruncate(_ file: UnsafeMutablePointer<sqlite3_file>?, _ size: sqlite3_int64) -> Int32 {
    let s = state(file)
    return s.core.withLock {
        if s.isDead { return ioerrTruncate }
        if let image = s.image, size < image.syncedSize {
            let rc = image.saveDurable(from: size, to: image.syncedSize, reading: s.real, s.io)
            if rc != SQLITE_OK { return rc }
            image.unsynced += Int(image.syncedSize - size)
            image.sizeChanged = true
        }
        return s.io.pointee.xTruncate!(s.real, size)
    }
}

private func plSync(_ file: UnsafeMutablePointer<sqlite3_file>?, _ flags: Int32) -> Int32 {
    let s = state(file)
    return s.core.withLock {
        if s.isDead { return ioerrFsync }
        s.core.syncCount += 1
        if s.core.forwardsSync {
            let rc = s.io.pointee.xSync!(s.real, flags)
            if rc != SQLITE_OK { return rc }
        }
        guard let image = s.image else { return SQLITE_OK }
        var size: sqlite3_int64 = 0
        let rc = s.io.pointee.xFileSize!(s.real, &size)
        if rc != SQLITE_OK { return rc }
        image.syncedSize = size
        image.saved.removeAll()
        image.unsynced = 0
        image.sizeChanged = false
        return SQLITE_OK
    }
}
