import Foundation
import QuireFuse

struct BrokenStorage: Error {}

/// A small in-memory filesystem for mounting in tests. Directory offsets are
/// inode numbers (+2, after "." and ".."), so they survive concurrent changes.
final class MemoryFileSystem: FuseFileSystem, @unchecked Sendable {
    struct Node {
        var attributes: FuseAttributes
        var data: [UInt8] = []
        var children: [String: FuseInode] = [:]
        var parent: FuseInode
        var extendedAttributes: [String: [UInt8]] = [:]
    }

    private let lock = NSLock()
    private var nodes: [FuseInode: Node] = [:]
    private var nextInode: UInt64 = 2
    private var handles: UInt64 = 0
    private(set) var flushCount = 0
    private(set) var destroyCount = 0
    /// Names the kernel may remember as missing for this long.
    var negativeTimeout: Double = 0
    var entryTimeout: Double = 1

    init() {
        let now = FuseTimestamp.now
        nodes[.root] = Node(
            attributes: FuseAttributes(
                inode: .root, kind: .directory, permissions: 0o755, linkCount: 2,
                accessTime: now, modificationTime: now, changeTime: now),
            parent: .root)
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    private func entry(_ inode: FuseInode) -> FuseEntry {
        FuseEntry(nodes[inode]!.attributes, attributeTimeout: 1, entryTimeout: entryTimeout)
    }

    /// Adds a file as if another device had synced it in (not through the mount).
    @discardableResult
    func addFileOutsideMount(_ name: String, contents: String, in parent: FuseInode = .root) -> FuseInode {
        locked { insert(name, in: parent, kind: .regular, permissions: 0o644, data: Array(contents.utf8)) }
    }

    private func insert(_ name: String, in parent: FuseInode, kind: FuseFileKind, permissions: UInt32,
                        data: [UInt8] = [], uid: UInt32 = 0, gid: UInt32 = 0) -> FuseInode {
        let inode = FuseInode(nextInode)
        nextInode += 1
        let now = FuseTimestamp.now
        nodes[inode] = Node(
            attributes: FuseAttributes(
                inode: inode, kind: kind, permissions: permissions, linkCount: kind == .directory ? 2 : 1,
                uid: uid, gid: gid, size: UInt64(data.count),
                accessTime: now, modificationTime: now, changeTime: now),
            data: data, parent: parent)
        nodes[parent]!.children[name] = inode
        return inode
    }

    private func directory(_ inode: FuseInode) throws -> Node {
        guard let node = nodes[inode] else { throw FuseError.noEntry }
        guard node.attributes.kind == .directory else { throw FuseError.notDirectory }
        return node
    }

    func destroy() { locked { destroyCount += 1 } }

    func lookup(parent: FuseInode, name: String, request: FuseRequest) throws -> FuseEntry {
        try locked {
            guard let child = try directory(parent).children[name] else {
                if negativeTimeout > 0 { return .negative(timeout: negativeTimeout) }
                throw FuseError.noEntry
            }
            return entry(child)
        }
    }

    func getAttributes(_ inode: FuseInode, handle: UInt64?, request: FuseRequest) throws -> FuseAttributeReply {
        try locked {
            guard let node = nodes[inode] else { throw FuseError.noEntry }
            return FuseAttributeReply(node.attributes, timeout: 1)
        }
    }

    func setAttributes(_ inode: FuseInode, _ changes: FuseAttributeChanges, handle: UInt64?,
                       request: FuseRequest) throws -> FuseAttributeReply {
        try locked {
            guard var node = nodes[inode] else { throw FuseError.noEntry }
            if changes.fields.contains(.size) {
                node.data = Array(node.data.prefix(Int(changes.size)))
                node.data += [UInt8](repeating: 0, count: Int(changes.size) - node.data.count)
            }
            node.attributes = changes.applied(to: node.attributes)
            node.attributes.changeTime = .now
            nodes[inode] = node
            return FuseAttributeReply(node.attributes, timeout: 1)
        }
    }

    func readDirectory(_ inode: FuseInode, handle: UInt64, offset: UInt64,
                       into buffer: inout FuseDirectoryBuffer, request: FuseRequest) throws {
        let (node, children) = try locked { () throws -> (Node, [(String, FuseInode, FuseFileKind)]) in
            let node = try directory(inode)
            let children = node.children.map { ($0.key, $0.value, nodes[$0.value]!.attributes.kind) }
                .sorted { $0.1 < $1.1 }
            return (node, children)
        }
        if offset < 1, !buffer.add(name: ".", inode: inode, kind: .directory, nextOffset: 1) { return }
        if offset < 2, !buffer.add(name: "..", inode: node.parent, kind: .directory, nextOffset: 2) { return }
        for (name, child, kind) in children where child.rawValue + 2 > offset {
            if !buffer.add(name: name, inode: child, kind: kind, nextOffset: child.rawValue + 2) { return }
        }
    }

    func open(_ inode: FuseInode, flags: FuseOpenFlags, request: FuseRequest) throws -> FuseOpenReply {
        try locked {
            guard var node = nodes[inode] else { throw FuseError.noEntry }
            if node.attributes.kind == .directory { throw FuseError.isDirectory }
            // libfuse's default atomic O_TRUNC: no setattr comes, so truncate here.
            if flags.isTruncating {
                node.data = []
                node.attributes.size = 0
                nodes[inode] = node
            }
            handles += 1
            return FuseOpenReply(handle: handles)
        }
    }

    func create(parent: FuseInode, name: String, mode: UInt32, flags: FuseOpenFlags,
                request: FuseRequest) throws -> FuseCreateReply {
        try locked {
            guard try directory(parent).children[name] == nil else { throw FuseError.exists }
            let inode = insert(name, in: parent, kind: .regular, permissions: mode, uid: request.uid, gid: request.gid)
            handles += 1
            return FuseCreateReply(entry: entry(inode), open: FuseOpenReply(handle: handles))
        }
    }

    func read(_ inode: FuseInode, handle: UInt64, offset: UInt64, size: Int, request: FuseRequest) throws -> [UInt8] {
        try locked {
            guard let node = nodes[inode] else { throw FuseError.noEntry }
            if node.extendedAttributes["user.broken"] != nil { throw BrokenStorage() }
            guard offset < node.data.count else { return [] }
            return Array(node.data[Int(offset)..<min(node.data.count, Int(offset) + size)])
        }
    }

    func write(_ inode: FuseInode, handle: UInt64, offset: UInt64, data: [UInt8],
               flags: FuseOpenFlags, request: FuseRequest) throws -> Int {
        try locked {
            guard var node = nodes[inode] else { throw FuseError.noEntry }
            let end = Int(offset) + data.count
            if node.data.count < end { node.data += [UInt8](repeating: 0, count: end - node.data.count) }
            node.data.replaceSubrange(Int(offset)..<end, with: data)
            node.attributes.size = UInt64(node.data.count)
            node.attributes.blocks = nil
            node.attributes.modificationTime = .now
            nodes[inode] = node
            return data.count
        }
    }

    func flush(_ inode: FuseInode, handle: UInt64, request: FuseRequest) throws {
        locked { flushCount += 1 }
    }

    func makeDirectory(parent: FuseInode, name: String, mode: UInt32, request: FuseRequest) throws -> FuseEntry {
        try locked {
            guard try directory(parent).children[name] == nil else { throw FuseError.exists }
            let inode = insert(name, in: parent, kind: .directory, permissions: mode, uid: request.uid, gid: request.gid)
            nodes[parent]!.attributes.linkCount += 1
            return entry(inode)
        }
    }

    func unlink(parent: FuseInode, name: String, request: FuseRequest) throws {
        try locked {
            guard let child = try directory(parent).children[name] else { throw FuseError.noEntry }
            if nodes[child]!.attributes.kind == .directory { throw FuseError.isDirectory }
            nodes[parent]!.children[name] = nil
        }
    }

    func removeDirectory(parent: FuseInode, name: String, request: FuseRequest) throws {
        try locked {
            guard let child = try directory(parent).children[name] else { throw FuseError.noEntry }
            guard try directory(child).children.isEmpty else { throw FuseError.notEmpty }
            nodes[parent]!.children[name] = nil
            nodes[parent]!.attributes.linkCount -= 1
        }
    }

    func rename(parent: FuseInode, name: String, newParent: FuseInode, newName: String,
                flags: FuseRenameFlags, request: FuseRequest) throws {
        try locked {
            guard let source = try directory(parent).children[name] else { throw FuseError.noEntry }
            let target = try directory(newParent).children[newName]
            if flags.contains(.whiteout) { throw FuseError.invalid }
            if flags.contains(.exchange) {
                guard let target else { throw FuseError.noEntry }
                nodes[parent]!.children[name] = target
                nodes[newParent]!.children[newName] = source
                nodes[target]!.parent = parent
                nodes[source]!.parent = newParent
                return
            }
            if flags.contains(.noReplace), target != nil { throw FuseError.exists }
            nodes[parent]!.children[name] = nil
            nodes[newParent]!.children[newName] = source
            nodes[source]!.parent = newParent
        }
    }

    func extendedAttribute(_ inode: FuseInode, name: String, request: FuseRequest) throws -> [UInt8] {
        try locked {
            guard let node = nodes[inode] else { throw FuseError.noEntry }
            guard let value = node.extendedAttributes[name] else { throw FuseError.noData }
            return value
        }
    }

    func setExtendedAttribute(_ inode: FuseInode, name: String, value: [UInt8],
                              flags: FuseExtendedAttributeFlags, request: FuseRequest) throws {
        try locked {
            guard let node = nodes[inode] else { throw FuseError.noEntry }
            let exists = node.extendedAttributes[name] != nil
            if flags.contains(.create), exists { throw FuseError.exists }
            if flags.contains(.replace), !exists { throw FuseError.noData }
            nodes[inode]!.extendedAttributes[name] = value
        }
    }

    func extendedAttributeNames(_ inode: FuseInode, request: FuseRequest) throws -> [String] {
        try locked {
            guard let node = nodes[inode] else { throw FuseError.noEntry }
            return node.extendedAttributes.keys.sorted()
        }
    }

    func removeExtendedAttribute(_ inode: FuseInode, name: String, request: FuseRequest) throws {
        try locked {
            guard nodes[inode] != nil else { throw FuseError.noEntry }
            guard nodes[inode]!.extendedAttributes.removeValue(forKey: name) != nil else { throw FuseError.noData }
        }
    }
}
