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
        do {
            guard try CloudIO.isFolder(path) else { throw AnchorError.unwritable("\(path) is not a folder (is the cloud folder mounted?)") }
            try CloudIO.write(bytes, to: anchorPath, mode: 0o600)
        } catch let error as AnchorError {
            throw error
        } catch {
            throw .unwritable("\(error)")
        }
    }

    public struct Candidate: Sendable {
        public var path: String
        public var header: AnchorHeader
    }

    /// Every file in the folder that claims to be an anchor of this
    /// account, highest generation first (headers only: no key needed).
    public func candidates() throws(AnchorError) -> [Candidate] { try scan().candidates }

    /// `candidates`, the files named as this account's anchors whose
    /// header does not read (empty, cut short, another format): a sync
    /// service's placeholder or an interrupted download, worth saying; and
    /// those whose header is whole but names another account (a file
    /// copied in, a folder two accounts share), which are not damaged.
    func scan() throws(AnchorError) -> (candidates: [Candidate], unreadable: [String], otherAccount: [String]) {
        let names: [String]
        do { names = try CloudIO.list(path) } catch let error as CloudIO.NotAnswering {
            throw .unreadable("\(path): \(error)")
        } catch {
            throw .unreadable("\(path): \(error.localizedDescription)")
        }
        let prefix = CloudFolder.filePrefix(accountID)
        var out: [Candidate] = []
        var unreadable: [String] = []
        var otherAccount: [String] = []
        for name in names where name.hasPrefix(prefix) && !name.contains(".tmp-") {
            guard let head = try CloudFolder.readHeader(path + "/" + name) else {
                unreadable.append(path + "/" + name)
                continue
            }
            do {
                out.append(Candidate(path: path + "/" + name, header: try AnchorFile.header(of: head, accountID: accountID)))
            } catch .otherAccount {
                otherAccount.append(path + "/" + name)
            } catch {
                unreadable.append(path + "/" + name)
            }
        }
        // At one generation, the canonical file first (and a revoking
        // device's copy of it sealed again, which stands for it): each write
        // replaces it, so at its generation it is the anchor written last.
        // No round can write one at a generation some device already
        // committed (every ack carries a digest with the generation), so the
        // last written is the committed one; a copy beside it (a sync
        // service's conflict copy) may be one of a round that never
        // committed, and recovering from that older snapshot would take rows
        // written since for collected ones. The time written orders only the
        // rest: it is the writer's clock, which may run ahead of the
        // committing leader's. Then the name.
        func rank(_ c: Candidate) -> Int { c.path == anchorPath || c.path.contains("-resealed-") ? 0 : 1 }
        let sorted = out.sorted {
            if $0.header.generation != $1.header.generation { return $0.header.generation > $1.header.generation }
            if rank($0) != rank($1) { return rank($0) < rank($1) }
            if $0.header.writtenAt != $1.header.writtenAt { return $0.header.writtenAt.seconds > $1.header.writtenAt.seconds }
            return $0.path < $1.path
        }
        return (sorted, unreadable.sorted(), otherAccount.sorted())
    }

    /// The header bytes of a file (the fixed part, then the key block), or
    /// nil if it cannot be read or is no anchor; throws when the folder
    /// does not answer (no anchor is not the same as none seen).
    static func readHeader(_ file: String) throws(AnchorError) -> [UInt8]? {
        // Regular files only: a FIFO under an anchor's name would block the reader.
        func read(_ limit: Int) throws(AnchorError) -> [UInt8]? {
            do { return try CloudIO.read(file, upTo: limit) } catch let error as CloudIO.NotAnswering {
                throw .unreadable("\(file): \(error)")
            } catch {
                return nil
            }
        }
        guard var head = try read(AnchorHeader.size + 4), let length = try? AnchorHeader.length(of: head) else { return nil }
        if length > head.count { head = try read(length) ?? [] }
        return head.count >= length ? Array(head.prefix(length)) : nil
    }

    /// One anchor refused on the way down to the newest usable one.
    public struct Refusal: Sendable {
        public var generation: UInt64
        public var path: String
        public var error: AnchorError
    }

    /// What the folder holds for a device with `keys`.
    public struct Survey: Sendable {
        /// The newest anchor this device may recover from: highest
        /// generation among those sealed under a key set holding every
        /// rotation it knows, that open.
        public var newest: (header: AnchorHeader, snapshot: AnchorSnapshot)?
        /// Anchors above `newest` that were refused, and why.
        public var refused: [Refusal] = []
        /// Rotations some anchor names that this device's log does not know:
        /// its log is behind (put back from an older backup), so no anchor
        /// is trusted until a sibling brings the log up to date.
        public var unknownRotations: [DeviceID] = []
        /// The highest generation any header claims.
        public var highestClaimed: UInt64?
        /// Files named as this account's anchors whose header does not read.
        public var unreadable: [String] = []
        /// Files named as this account's anchors whose whole header names another account.
        public var otherAccount: [String] = []
    }

    /// Reads the folder: the newest usable anchor, and what was refused above it.
    public func survey(keys: AnchorKeys) throws(AnchorError) -> Survey {
        var survey = Survey()
        var unknown = Set<DeviceID>()
        let scanned = try scan()
        survey.unreadable = scanned.unreadable
        survey.otherAccount = scanned.otherAccount
        for candidate in scanned.candidates {
            survey.highestClaimed = max(survey.highestClaimed ?? 0, candidate.header.generation)
            unknown.formUnion(keys.unknownRotations(in: candidate.header.keySet))
            guard survey.newest == nil else { continue }
            do {
                survey.newest = try open(candidate, keys: keys)
            } catch {
                survey.refused.append(Refusal(generation: candidate.header.generation, path: candidate.path, error: error))
            }
        }
        unknown.formUnion(commitRecordUnknownRotations(keys: keys))
        survey.unknownRotations = unknown.sorted()
        return survey
    }

    /// The newest usable anchor (see `Survey.newest`).
    public func newest(keys: AnchorKeys) throws(AnchorError) -> (AnchorHeader, AnchorSnapshot)? {
        try survey(keys: keys).newest
    }

    /// The anchor the barrier round `nonce` wrote at `generation`, if the
    /// folder shows it and it opens with `keys` (nil otherwise: not there
    /// yet, replaced, or written by a leader from before field 6).
    public func anchor(ofRound nonce: [UInt8], generation: UInt64, keys: AnchorKeys) throws(AnchorError) -> AnchorSnapshot? {
        for candidate in try candidates() where candidate.header.generation == generation {
            if let opened = try? open(candidate, keys: keys), opened.snapshot.round == nonce { return opened.snapshot }
        }
        return nil
    }

    private func open(_ candidate: Candidate, keys: AnchorKeys) throws(AnchorError) -> (header: AnchorHeader, snapshot: AnchorSnapshot) {
        let data: [UInt8]
        do { data = try CloudIO.read(candidate.path) } catch { throw .unreadable("\(candidate.path): \(error)") }
        return try AnchorFile.open(data, accountID: accountID, keys: keys)
    }
}
