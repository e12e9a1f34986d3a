import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// A `QuireFileSystem` over a temporary replica, driven the way the kernel
/// drives it (lookup, open, write, flush, release, rename...), with no
/// mount and no root. Paths are "folder/name"; a `Descriptor` stands for
/// an open file (the kernel's inode and handle). Sendable as the kernel's
/// threads are: everything mutable is the filesystem's, which has its lock.
final class DirectMount: @unchecked Sendable {
    struct Descriptor {
        var inode: FuseInode
        var handle: UInt64
        var flags: FuseOpenFlags
        var options: FuseOpenReply.Options
    }

    let directory: String
    let store: ReplicaStore
    let fileSystem: QuireFileSystem
    let caller = FuseRequest(uid: getuid(), gid: getgid(), pid: getpid())

    init(_ seed: (ReplicaStore) throws -> Void = { _ in }, recall: (@Sendable (RowKey, [UInt8], Double) throws -> [UInt8])? = nil) throws {
        directory = NSTemporaryDirectory() + "quire-direct-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory + "/scratch", withIntermediateDirectories: true)
        store = try ReplicaStore(path: directory + "/replica.sqlite", deviceID: DeviceID(bytes: [UInt8](repeating: 0xD1, count: 16))!, create: true)
        try seed(store)
        let configuration = QuireFileSystem.Configuration(
            scratchPath: directory + "/scratch", mountpoint: directory + "/mnt", log: MountLog(path: nil),
            status: { status in ("\(status.openFiles) open files", Array("{}".utf8)) }, digest: { [] }, recall: recall)
        fileSystem = try QuireFileSystem(store: store, configuration: configuration)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// The filesystem a next mount of this device starts with: the same
    /// replica and scratch area, listed and tidied as before serving.
    func nextMount() throws -> QuireFileSystem {
        let next = try QuireFileSystem(store: store, configuration: fileSystem.configuration)
        next.preloadListings()
        return next
    }

    // MARK: Names

    func folderInode(_ folder: String) throws -> FuseInode {
        var inode = FuseInode.root
        for part in folder.split(separator: "/") {
            inode = try fileSystem.lookup(parent: inode, name: String(part), request: caller).attributes.inode
        }
        return inode
    }

    // MARK: Folders

    func mkdir(_ path: String) throws {
        let (folder, name) = split(path)
        _ = try checked { try fileSystem.makeDirectory(parent: try folderInode(folder), name: name, mode: 0o755, request: caller) }
    }

    func rmdir(_ path: String) throws {
        let (folder, name) = split(path)
        try checked { try fileSystem.removeDirectory(parent: try folderInode(folder), name: name, request: caller) }
    }

    /// The names a folder lists (without `.` and `..`), sorted.
    func list(_ path: String) throws -> [String] {
        let inode = try folderInode(path)
        return try checked {
            let handle = try fileSystem.openDirectory(inode, flags: FuseOpenFlags(rawValue: O_RDONLY), request: caller).handle
            defer { try? fileSystem.releaseDirectory(inode, handle: handle, request: caller) }
            let entries = fileSystem.locked { fileSystem.directorySnapshots[handle] ?? [] }
            return entries.map(\.name).filter { $0 != "." && $0 != ".." }.sorted()
        }
    }

    func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return ("", path) }
        return (String(path[..<slash]), String(path[path.index(after: slash)...]))
    }

    func lookup(_ path: String) throws -> FuseEntry {
        let (folder, name) = split(path)
        return try checked { try fileSystem.lookup(parent: try folderInode(folder), name: name, request: caller) }
    }

    func exists(_ path: String) -> Bool { (try? lookup(path)) != nil }

    // MARK: Files

    func open(_ path: String, _ flags: Int32) throws -> Descriptor {
        let inode = try lookup(path).attributes.inode
        let reply = try checked { try fileSystem.open(inode, flags: FuseOpenFlags(rawValue: flags), request: caller) }
        return Descriptor(inode: inode, handle: reply.handle, flags: FuseOpenFlags(rawValue: flags), options: reply.options)
    }

    /// open(2) with O_CREAT: the kernel looks the name up first and calls
    /// create only when it is missing.
    func create(_ path: String, _ flags: Int32 = O_WRONLY | O_TRUNC) throws -> Descriptor {
        if exists(path) { return try open(path, flags) }
        let (folder, name) = split(path)
        let reply = try checked {
            try fileSystem.create(parent: try folderInode(folder), name: name, mode: 0o100644,
                                  flags: FuseOpenFlags(rawValue: flags | O_CREAT), request: caller)
        }
        return Descriptor(inode: reply.entry.attributes.inode, handle: reply.open.handle, flags: FuseOpenFlags(rawValue: flags | O_CREAT),
                          options: reply.open.options)
    }

    @discardableResult
    func write(_ file: Descriptor, _ text: String, at offset: Int = 0) throws -> Int {
        try checked { try fileSystem.write(file.inode, handle: file.handle, offset: UInt64(offset), data: Array(text.utf8), flags: file.flags, request: caller) }
    }

    func read(_ file: Descriptor) throws -> String {
        let bytes = try checked { try fileSystem.read(file.inode, handle: file.handle, offset: 0, size: 1 << 20, request: caller) }
        return String(decoding: bytes, as: UTF8.self)
    }

    func size(_ file: Descriptor) throws -> UInt64 {
        try checked { try fileSystem.getAttributes(file.inode, handle: file.handle, request: caller).attributes.size }
    }

    func truncate(_ file: Descriptor, to size: UInt64) throws {
        let changes = FuseAttributeChanges(fields: [.size], size: size)
        _ = try checked { try fileSystem.setAttributes(file.inode, changes, handle: file.handle, request: caller) }
    }

    /// close(2) of the last descriptor: flush (unless the open said no
    /// flush is needed), then release.
    func close(_ file: Descriptor) throws {
        defer { try? checked { try fileSystem.release(file.inode, handle: file.handle, flags: file.flags, request: caller) } }
        if !file.options.contains(.noFlush) { try checked { try fileSystem.flush(file.inode, handle: file.handle, request: caller) } }
    }

    func writeFile(_ path: String, _ text: String) throws {
        let file = try create(path)
        try write(file, text)
        try close(file)
    }

    /// What `cat` shows, or nil when the name does not exist.
    func text(_ path: String) throws -> String? {
        guard exists(path) else { return nil }
        let file = try open(path, O_RDONLY)
        defer { try? close(file) }
        return try read(file)
    }

    func rename(_ from: String, _ to: String, flags: FuseRenameFlags = []) throws {
        let (folder, name) = split(from), (newFolder, newName) = split(to)
        try checked {
            try fileSystem.rename(parent: try folderInode(folder), name: name, newParent: try folderInode(newFolder), newName: newName,
                                  flags: flags, request: caller)
        }
    }

    func unlink(_ path: String) throws {
        let (folder, name) = split(path)
        try checked { try fileSystem.unlink(parent: try folderInode(folder), name: name, request: caller) }
    }

    /// What the change feed does when the store commits: apply what
    /// changed elsewhere (returns the invalidations it would send).
    @discardableResult
    func feed() -> [Invalidation] {
        let work = fileSystem.takeChanges().work
        fileSystem.locked { fileSystem.kernelCache.delivered() }
        return work
    }

    // MARK: The store

    /// The live row of `namespace` titled `title`, and its text.
    func stored(_ namespace: Namespace, _ title: String) throws -> String? {
        guard let summary = try store.summaries(namespace).first(where: { $0.name == title }),
              let content = try store.row(namespace, summary.key)?.content else { return nil }
        return RowFormat.render(content).map { String(decoding: $0, as: UTF8.self) }
    }

    func liveTitles(_ namespace: Namespace) throws -> [String] { try store.summaries(namespace).map(\.name).sorted() }

    // MARK: Invariants

    func checked<T>(_ body: () throws -> T) throws -> T {
        // After every request: no working copy outlives its handles.
        defer {
            let unheld = fileSystem.locked { fileSystem.openFiles.unheldCopies }
            XCTAssertEqual(unheld, [], "working copies with no handle after a request")
        }
        return try body()
    }
}

extension ReplicaStore {
    @discardableResult
    func putNote(_ title: String, _ body: String) throws -> Row {
        try put(.note(Note(title: title, body: Array(body.utf8), createdAt: Timestamp(seconds: 1_700_000_000),
                           updatedAt: Timestamp(seconds: 1_700_000_000))))
    }
}

/// A second running program (a `sleep`), and requests made as it: for
/// tests of what one program was shown beside another.
func startOtherProgram() throws -> (process: Process, request: FuseRequest) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sleep")
    process.arguments = ["30"]
    try process.run()
    return (process, FuseRequest(uid: getuid(), gid: getgid(), pid: process.processIdentifier))
}
