import Foundation
import QuireCore
import QuireCrypto
import QuireStore

/// The cloud directory: a folder some file-sync service keeps the same on
/// every device (on one machine, just a shared folder). Never inside the
/// device directory: a device backup never includes it and a restore never
/// touches it. It may hold several anchors of one account (a sync
/// service's conflict copy, an older anchor put back by a restore of the
/// folder itself): the highest valid generation wins, so neither a copy
/// nor an older file can cause a false "rolled back" or a resurrection.
public struct CloudFolder: Sendable {
    public let path: String
    public let accountID: [UInt8]

    public init(path: String, accountID: [UInt8]) {
        self.path = path
        self.accountID = accountID
    }

    /// The canonical anchor file of this account.
    public var anchorPath: String { path + "/" + CloudFolder.filePrefix(accountID) + ".qanchor" }

    static func filePrefix(_ accountID: [UInt8]) -> String { "quire-anchor-" + Hex.encode(accountID.prefix(6)) }

    /// Writes an anchor and returns once it has landed: temporary file,
    /// fsync, rename, fsync of the folder.
    public func write(_ bytes: [UInt8]) throws(AnchorError) {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir), isDir.boolValue else {
            throw .unwritable("\(path) is not a folder (is the cloud folder mounted?)")
        }
        do { try AtomicFile.write(bytes, to: anchorPath, mode: 0o600) } catch { throw .unwritable("\(error)") }
    }

    public struct Candidate: Sendable {
        public var path: String
        public var header: AnchorHeader
    }

    /// Every file in the folder that claims to be an anchor of this
    /// account, highest generation first (headers only: no key needed).
    public func candidates() throws(AnchorError) -> [Candidate] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: path) } catch {
            throw .unreadable("\(path): \(error.localizedDescription)")
        }
        let prefix = CloudFolder.filePrefix(accountID)
        var out: [Candidate] = []
        for name in names where name.hasPrefix(prefix) && !name.contains(".tmp-") {
            guard let handle = FileHandle(forReadingAtPath: path + "/" + name) else { continue }
            let head = (try? handle.read(upToCount: AnchorHeader.size)) ?? nil
            try? handle.close()
            guard let head, let header = try? AnchorFile.header(of: Array(head), accountID: accountID) else { continue }
            out.append(Candidate(path: path + "/" + name, header: header))
        }
        // At one generation, the anchor written last first: an anchor for a
        // round that never committed (or its conflict copy) is overwritten
        // by the next round at that generation, and recovering from the
        // older snapshot would take rows written since for collected ones
        // (the simulator's seed 103 with --cloud-and-power-faults).
        return out.sorted {
            if $0.header.generation != $1.header.generation { return $0.header.generation > $1.header.generation }
            if $0.header.writtenAt != $1.header.writtenAt { return $0.header.writtenAt.seconds > $1.header.writtenAt.seconds }
            return $0.path < $1.path
        }
    }

    /// The fleet's generation as the folder shows it: the highest one among
    /// the anchors that open with `backupKey` (or, without a key, the
    /// highest header). nil: no anchor at all.
    public func generation(backupKey: SecretBytes?) throws(AnchorError) -> UInt64? {
        for candidate in try candidates() {
            guard let backupKey else { return candidate.header.generation }
            if (try? open(candidate, backupKey: backupKey)) != nil { return candidate.header.generation }
        }
        return nil
    }

    /// The newest anchor that opens with the key.
    public func newest(backupKey: SecretBytes) throws(AnchorError) -> (AnchorHeader, AnchorSnapshot)? {
        for candidate in try candidates() {
            if let opened = try? open(candidate, backupKey: backupKey) { return opened }
        }
        return nil
    }

    private func open(_ candidate: Candidate, backupKey: SecretBytes) throws(AnchorError) -> (AnchorHeader, AnchorSnapshot) {
        guard let data = FileManager.default.contents(atPath: candidate.path) else { throw .unreadable(candidate.path) }
        return try AnchorFile.open(Array(data), accountID: accountID, backupKey: backupKey)
    }
}
