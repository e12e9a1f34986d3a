import QuireCore
import QuireFuse
import QuireStore

/// Quire's attributes on row files:
///   user.quire.key          the row key, hex (read-only)
///   user.quire.tags         a note's tags, comma-separated (read/write: a new version)
///   user.quire.contentHash  a note's body hash, hex (read-only)
///   user.quire.resident     "1" when the body is on this device, "0" when offloaded (read-only)
///   user.quire.holder       while offloaded: the devices holding the body, "name (id)" comma-separated (read-only)
/// Writing a read-only one, or the tags a note has already, changes
/// nothing and succeeds, as chmod does: copying tools (`cp -a`, `mv` across
/// filesystems, `rsync -X`) write back every attribute they read.
/// Other `user.*` attributes (editors add their own), and Quire's on files
/// that are not rows (an rsync temp file), are kept for the session only,
/// never synced, under the NFC form of their name (any form reaches them,
/// as with file names); other namespaces get EOPNOTSUPP. A temp file's
/// `user.quire.tags` become the note's when it is renamed onto a note name.
extension QuireFileSystem {
    static let keyAttribute = "user.quire.key"
    static let tagsAttribute = "user.quire.tags"
    static let hashAttribute = "user.quire.contentHash"
    static let residentAttribute = "user.quire.resident"
    static let holderAttribute = "user.quire.holder"

    private func quireAttributes(_ ref: RowRef) throws(FuseError) -> [String: [UInt8]] {
        var values: [String: [UInt8]] = [Self.keyAttribute: Array(ref.key.hex.utf8)]
        guard ref.namespace == .notebook, openFiles.copy(ref)?.isNew != true else { return values }
        let row: Row?
        do { row = try store.row(ref.namespace, ref.key) } catch { throw storeFailure(error, doing: "read \(displayName(ref))") }
        guard case .note(let note)? = row?.content else { return values }
        values[Self.tagsAttribute] = Array(note.tags.joined(separator: ",").utf8)
        values[Self.hashAttribute] = Array(Hex.encode(note.contentHash).utf8)
        values[Self.residentAttribute] = Array((note.body == nil ? "0" : "1").utf8)
        if note.body == nil {
            let holders = (try? store.offloadHolders(ref.key)) ?? []
            values[Self.holderAttribute] = Array(holders.map { id -> String in
                // The name the device log gives it (its statements were verified when they arrived).
                if let name = store.displayName(ofDevice: id) { return "\(name) (\(id.hex.prefix(12)))" }
                return id.hex
            }.joined(separator: ", ").utf8)
        }
        return values
    }

    public func extendedAttribute(_ inode: FuseInode, name: String, request: FuseRequest) throws -> [UInt8] {
        try locked { () throws(FuseError) -> [UInt8] in
            guard let object = names.inodes.object(inode.rawValue) else { throw .noEntry }
            if case .row(let ref) = object, name.hasPrefix("user.quire.") {
                guard let value = try quireAttributes(ref)[name] else { throw .noData }
                return value
            }
            // Not "no such attribute" but "no such namespace here": coreutils'
            // ls caches an unsupported answer per device, so `ls -l` stops
            // asking for security.selinux and system.posix_acl_access.
            guard name.hasPrefix("user.") else { throw .operationNotSupported }
            guard let value = transientAttributes[inode.rawValue]?[CanonicalName(name)] else { throw .noData }
            return value
        }
    }

    public func extendedAttributeNames(_ inode: FuseInode, request: FuseRequest) throws -> [String] {
        try locked { () throws(FuseError) -> [String] in
            guard let object = names.inodes.object(inode.rawValue) else { throw .noEntry }
            var names: [String] = []
            if case .row(let ref) = object { names = try quireAttributes(ref).keys.sorted() }
            return names + (transientAttributes[inode.rawValue]?.keys.sorted().map(\.text) ?? [])
        }
    }

    public func setExtendedAttribute(_ inode: FuseInode, name: String, value: [UInt8],
                                     flags: FuseExtendedAttributeFlags, request: FuseRequest) throws {
        try locked { () throws(FuseError) in
            guard let object = names.inodes.object(inode.rawValue) else { throw .noEntry }
            if case .kept(let node) = object { throw refuseKeptChange(node, "setxattr") }
            if name.hasPrefix("user.quire."), case .row(let ref) = object {
                guard name == Self.tagsAttribute, ref.namespace == .notebook else { return }
                if flags.contains(.create) { throw .exists }
                guard let tags = Self.tags(value) else {
                    throw refuse(.illegalByteSequence, "tags of notebook/\(displayName(ref)) must be UTF-8 text")
                }
                try setTags(ref, tags)
                return
            }
            // ACLs and security labels are not kept (permissions are fixed).
            guard name.hasPrefix("user.") else { throw .operationNotSupported }
            let name = CanonicalName(name)
            let exists = transientAttributes[inode.rawValue]?[name] != nil
            if flags.contains(.create) && exists { throw .exists }
            if flags.contains(.replace) && !exists { throw .noData }
            transientAttributes[inode.rawValue, default: [:]][name] = value
        }
    }

    public func removeExtendedAttribute(_ inode: FuseInode, name: String, request: FuseRequest) throws {
        try locked { () throws(FuseError) in
            guard let object = names.inodes.object(inode.rawValue) else { throw .noEntry }
            if case .kept(let node) = object { throw refuseKeptChange(node, "removexattr") }
            if name.hasPrefix("user.quire."), case .row(let ref) = object {
                guard name == Self.tagsAttribute, ref.namespace == .notebook else { throw .notPermitted }
                try setTags(ref, [])
                return
            }
            guard name.hasPrefix("user.") else { throw .operationNotSupported }
            guard transientAttributes[inode.rawValue]?.removeValue(forKey: CanonicalName(name)) != nil else { throw .noData }
        }
    }

    /// The tags a `user.quire.tags` value names (nil: not UTF-8).
    static func tags(_ value: [UInt8]) -> [String]? {
        String(validating: value, as: UTF8.self).map { $0.split(separator: ",").map { String($0).trimmingSpaces } }
    }

    private func setTags(_ ref: RowRef, _ tags: [String]) throws(FuseError) {
        if openFiles.copy(ref)?.isNew == true { try commit(ref, shown: nil) }
        let row: Row?
        do { row = try store.row(ref.namespace, ref.key) } catch { throw storeFailure(error, doing: "read \(displayName(ref))") }
        guard case .note(var note)? = row?.content else { throw .noEntry }
        if Set(note.tags) == Set(tags) { return }
        note.tags = tags
        do { recordWrite(ref, try store.putFromMount(.note(note), key: ref.key)) } catch {
            throw storeFailure(error, doing: "tag notebook/\(displayName(ref))")
        }
    }
}
