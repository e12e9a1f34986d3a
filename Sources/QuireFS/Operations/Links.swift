import Glibc
import QuireCore
import QuireFuse

extension QuireFileSystem {
    /// link(2) of a file that is not a row (a temp file) to a new name:
    /// the new name gets a copy of its bytes, made as a save by rename.
    ///
    /// Why: Python's atomicwrites, which khard and todoman save through,
    /// writes a new file as a temp file (`tmpXXXXXXXX`) in the folder,
    /// links it to the final name (so an existing file is never replaced
    /// by accident) and unlinks the temp file. Rows cannot share an inode,
    /// and nothing needs them to: the temp file is unlinked right after.
    /// A row is never linked (EPERM, with the reason in the log): two names
    /// for one row would be one row edited under two titles.
    public func link(_ inode: FuseInode, newParent: FuseInode, newName typedNew: String, request: FuseRequest) throws -> FuseEntry {
        let newName = CanonicalName(typedNew)
        return try locked { () throws(FuseError) -> FuseEntry in
            let target = try folder(newParent.rawValue)
            guard case .scratch(let source, let name)? = names.inodes.object(inode.rawValue) else {
                throw refuse(.notPermitted, "link to \(typedNew): \(describe(inode.rawValue)) is a row, and a row has one name; copy it instead", kind: "link")
            }
            guard source == target else {
                throw refuse(.notPermitted, "link to \(typedNew): links across folders are not kept; copy the file instead", kind: "link")
            }
            if (try? lookUp(newName, in: newParent.rawValue)) != nil { throw .exists }
            let bytes = try scratch.contents(source, name)
            let temporary = CanonicalName(".quire-link-" + Hex.encode((0..<8).map { _ in UInt8.random(in: 0...255) }))
            try scratch.replaceContents(source, temporary, with: bytes)
            do throws(FuseError) {
                try rename(temporary, in: newParent.rawValue, to: newName, in: newParent.rawValue, flags: .noReplace,
                           process: processGroups.process(of: request.pid))
            } catch {
                try? scratch.remove(source, temporary)
                throw error
            }
            return spelled(typedNew, newName, try lookUp(newName, in: newParent.rawValue))
        }
    }

    /// A row is bytes and a name: there is nothing to keep a link target,
    /// a fifo or a device in, on this device or a sibling.
    ///
    /// Emacs locks a file it edits with a symlink `.#name`; refused with
    /// EPERM it makes a plain lock file instead (a local scratch file
    /// here), so that refusal is no problem to report at every edit.
    public func makeSymbolicLink(parent: FuseInode, name: String, target: String, request: FuseRequest) throws -> FuseEntry {
        if name.hasPrefix(".#") { throw FuseError.notPermitted }
        let place = locked { describe(parent.rawValue) }
        throw refuse(.notPermitted, "symlink \(place)/\(name) refused: symbolic links are not kept (copy the file instead)", kind: "symlink")
    }

    public func makeNode(parent: FuseInode, name: String, mode: UInt32, device: UInt64, request: FuseRequest) throws -> FuseEntry {
        let place = locked { describe(parent.rawValue) }
        throw refuse(.notPermitted, "mknod \(place)/\(name) refused: fifos, sockets and device nodes are not kept", kind: "mknod")
    }
}
