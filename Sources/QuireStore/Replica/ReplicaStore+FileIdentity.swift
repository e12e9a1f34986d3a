import CSystem
import Foundation
import QuireCore

/// Which file on disk the replica is: its inode number and birth time.
/// A copy of the device directory put back by hand (`cp -a`, `rsync`, `tar`)
/// or moved to another disk is a new file with the old content, so it
/// carries the incarnation of the moment the copy was taken; writing under
/// it again would mint dots the fleet may already hold. The replica records
/// the identity of the file it was last opened as, and an open that finds
/// another file mints a new incarnation before any write.
///
/// What this cannot see: a copy written back into the same file (`dd`,
/// `rsync --inplace`) or a whole disk or virtual machine put back from a
/// snapshot keeps the inode and birth time. Those still rely on the cloud
/// anchor and on what siblings show (ReplicaStore+Incarnation.swift).
struct FileIdentity {
    let inode: UInt64
    /// Nil where the file system keeps no birth time: the inode alone then
    /// (a deleted replica's inode number can be handed to its copy).
    let birth: (seconds: Int64, nanoseconds: UInt32)?

    /// The identity of the file at `path` (symlinks followed); nil when it
    /// cannot be read.
    static func of(_ path: String) -> FileIdentity? {
        var inode: UInt64 = 0, seconds: Int64 = 0, nanoseconds: UInt32 = 0, hasBirth: Int32 = 0
        let rc = path.withCString { p in
            withUnsafeMutablePointer(to: &inode) { i in
                i.withMemoryRebound(to: CUnsignedLongLong.self, capacity: 1) { i in
                    withUnsafeMutablePointer(to: &seconds) { s in
                        s.withMemoryRebound(to: CLongLong.self, capacity: 1) { s in
                            csystem_inode_and_birth(p, i, s, &nanoseconds, &hasBirth)
                        }
                    }
                }
            }
        }
        guard rc == 0 else { return nil }
        return FileIdentity(inode: inode, birth: hasBirth != 0 ? (seconds, nanoseconds) : nil)
    }

    /// How it is kept in meta: "inode birth-seconds.nanoseconds" or "inode".
    var text: String {
        guard let birth else { return "\(inode)" }
        return "\(inode) \(birth.seconds).\(birth.nanoseconds)"
    }
}

extension ReplicaStore {
    /// At open: the replica file is the one this device last recorded, or a
    /// new incarnation is minted (and the file recorded) before anything
    /// else is written. A replica that never recorded one (made by an
    /// earlier version) mints one too, without calling it a rollback: it
    /// may be such a copy.
    func checkFileIdentity() throws(StoreError) {
        guard let identity = FileIdentity.of(path) else { return }
        let recorded = try read { () throws(StoreError) -> String? in try recordedFileIdentity(db) }
        guard recorded != identity.text else { return }
        try write { ctx in
            // Another process may have minted and recorded it meanwhile.
            let again = try recordedFileIdentity(ctx.db)
            guard again != identity.text else { return }
            try ctx.mintIncarnation(reason: "its replica file is not the one it last wrote to (a copy of the device directory put "
                                    + "back by hand, or the directory moved to another disk)", reissued: 0, isRollback: again != nil)
            try ctx.recordFileIdentity(identity)
        }
    }
}

func recordedFileIdentity(_ db: Connection) throws(StoreError) -> String? {
    try db.queryOne("SELECT value FROM meta WHERE name = 'file_identity'", []) { $0.text(0) ?? "" }
}

extension WriteContext {
    /// Records the replica file as this device's own (after minting the
    /// incarnation it writes under from now on).
    func recordFileIdentity(_ identity: FileIdentity? = nil) throws(StoreError) {
        guard let identity = identity ?? FileIdentity.of(store.path) else { return }
        try db.run("INSERT OR REPLACE INTO meta(name, value) VALUES ('file_identity', ?)", [.text(identity.text)])
    }
}
