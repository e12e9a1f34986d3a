import Foundation
import QuireCore
import QuireCrypto
import QuireStore

/// The cloud anchor: the fleet's generation where a device restore cannot
/// revert it, and the account's snapshot at that generation (also the
/// user's last-resort backup). The header (`AnchorHeader`) is cleartext;
/// the body is XChaCha20-Poly1305 under the backup key of the header's key
/// set, with the whole header as associated data: nonce (24) ‖ ciphertext ‖
/// tag (16) of the snapshot. Format: docs/anchor-format.md.
/// What an anchor holds: every live row of the account at its generation
/// (bodies as the writer held them: an offloaded note travels as a pointer),
/// and the graveyard: the context of every tombstone a barrier collected
/// (`CollectedTombstone`; absent from anchors written before it existed).
public struct AnchorSnapshot: Equatable, Sendable {
    public var generation: UInt64
    public var rows: [Row]
    public var graveyard: [CollectedTombstone]
    /// The devices whose state the round agreed on (field 4; nil in
    /// anchors written before it existed). A device behind this generation
    /// that is not one of them was never rolled back: the fleet never held
    /// its state (`ReplicaStore.recover`).
    public var roster: [DeviceID]?
    /// The first generation whose collections the graveyard holds all of
    /// (field 5; nil: not known, as in anchors written before it existed).
    /// A device behind the anchor whose own generation is at least this
    /// less one can trust the graveyard to name every version the fleet
    /// deleted since its state.
    public var graveyardSince: UInt64?
    /// The nonce of the barrier round that wrote it (field 6; nil in anchors
    /// written before it existed). A follower covering a round from the
    /// anchor takes only that round's: a cloud folder synced by a service
    /// may still show an abandoned round's anchor at the same generation.
    public var round: [UInt8]?

    public init(generation: UInt64, rows: [Row], graveyard: [CollectedTombstone] = [], roster: [DeviceID]? = nil,
                graveyardSince: UInt64? = nil, round: [UInt8]? = nil) {
        self.graveyardSince = graveyardSince
        self.round = round
        self.generation = generation
        self.rows = rows
        self.graveyard = graveyard
        self.roster = roster?.sorted()
    }

    public func encoded() -> [UInt8] {
        var byNamespace: [Namespace: [Row]] = [:]
        for row in rows { byNamespace[row.namespace, default: []].append(row) }
        let groups: [CBOR] = Namespace.allCases.compactMap { ns in
            guard let rows = byNamespace[ns] else { return nil }
            return .array([.unsigned(UInt64(ns.rawValue)), .array(rows.map(RowWire.encode))])
        }
        var fields: [(CBOR, CBOR)] = [(.unsigned(1), .unsigned(generation)), (.unsigned(2), .array(groups))]
        if !graveyard.isEmpty { fields.append((.unsigned(3), CollectedTombstone.encode(graveyard))) }
        if let roster { fields.append((.unsigned(4), .array(roster.map { .bytes($0.bytes) }))) }
        if let graveyardSince { fields.append((.unsigned(5), .unsigned(graveyardSince))) }
        if let round { fields.append((.unsigned(6), .bytes(round))) }
        return CBORWriter.encode(.map(fields))
    }

    public init(decoding bytes: [UInt8]) throws(AnchorError) {
        do {
            let fields = try CBORReader.decode(bytes).asFieldMap()
            generation = try fields.required(1, "generation").asUInt()
            var rows: [Row] = []
            for group in try fields.required(2, "rows").asArray() {
                let parts = try group.asArray()
                // exactly: a number past 255 is no namespace, not a trap (tools/fuzz, sync).
                guard parts.count == 2, let raw = UInt8(exactly: try parts[0].asUInt()), let ns = Namespace(rawValue: raw) else {
                    throw AnchorError.malformed("a snapshot group names no namespace")
                }
                for item in try parts[1].asArray() {
                    guard let row = RowWire.decode(item, namespace: ns) else { throw AnchorError.malformed("a \(ns) row in the snapshot does not decode") }
                    rows.append(row)
                }
            }
            self.rows = rows
            graveyard = try fields.optional(3).map(CollectedTombstone.decode) ?? []
            if let list = fields.optional(4) {
                var ids: [DeviceID] = []
                for item in try list.asArray() {
                    guard let id = ID16(bytes: try item.asBytes()) else { throw AnchorError.malformed("a roster entry is not a device id") }
                    ids.append(id)
                }
                roster = ids.sorted()
            } else {
                roster = nil
            }
            graveyardSince = try fields.optional(5)?.asUInt()
            round = try fields.optional(6)?.asBytes()
            if let round, round.count != 16 { throw AnchorError.malformed("a round nonce is 16 bytes") }
        } catch let error as AnchorError {
            throw error
        } catch {
            throw .malformed("the snapshot does not decode: \(error)")
        }
    }
}

extension AnchorSnapshot {
    /// Whether the graveyard names every version the fleet deleted and
    /// collected after a device at generation `local` (see `graveyardSince`).
    public func graveyardCovers(since local: UInt64) -> Bool { coverage?.covers(after: local) ?? false }

    /// The rounds the graveyard names in full (field 5, through this generation).
    public var coverage: GraveyardCoverage? { graveyardSince.map { GraveyardCoverage(since: $0, through: generation) } }

    /// `graveyardSince` for the anchor of `generation`, written after
    /// `previous` (whose graveyard the writer adopted): its claim carries
    /// over only from the round before (or an abandoned one at this
    /// generation); past a gap, that gap's rounds are not named.
    public static func graveyardSince(generation: UInt64, previous: AnchorSnapshot?) -> UInt64 {
        guard let previous else { return generation == 1 ? 1 : generation }
        guard previous.generation + 1 >= generation else { return generation }
        return previous.graveyardSince ?? generation
    }
}

public enum AnchorError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    case unsupportedFormat(UInt8)
    case otherAccount
    case doesNotOpen(String)
    /// Sealed with a key from before a revocation this device knows.
    case staleKey(String)
    /// Sealed with the key of a rotation this device does not hold (or has not learned).
    case keyNotHeld(String)
    case unreadable(String)
    case unwritable(String)

    public var description: String {
        switch self {
        case .malformed(let why): return "anchor is malformed: \(why)"
        case .unsupportedFormat(let v): return "anchor format \(v) is not one this quire reads; upgrade quire"
        case .otherAccount: return "anchor belongs to another account"
        case .doesNotOpen(let why): return "anchor does not open with this account's backup key (altered, or another key): \(why)"
        case .staleKey(let why): return "anchor refused: \(why)"
        case .keyNotHeld(let why): return "anchor cannot be opened here: \(why)"
        case .unreadable(let why): return "cloud folder cannot be read: \(why)"
        case .unwritable(let why): return "cloud folder cannot be written: \(why)"
        }
    }
}

/// Sealing and opening whole anchor files.
public enum AnchorFile {
    /// Format 1, as quire wrote before rotation existed: the original key,
    /// no key block (tests, and the drills that check old anchors still open).
    public static func sealFormat1(_ snapshot: AnchorSnapshot, accountID: [UInt8], backupKey: SecretBytes, at: Timestamp) throws -> [UInt8] {
        let header = AnchorHeader(generation: snapshot.generation, accountID: accountID, writtenAt: at, format: 1).encoded()
        return header + (try AEAD.seal(snapshot.encoded(), associatedData: header, with: backupKey))
    }

    /// The header alone (no key needed), checked to be this account's.
    public static func header(of bytes: [UInt8], accountID: [UInt8]) throws(AnchorError) -> AnchorHeader {
        let header = try AnchorHeader(decoding: bytes)
        guard header.accountID == accountID else { throw .otherAccount }
        return header
    }

    /// Opens the body with `key`; the header (associated data) and the
    /// snapshot's own generation must agree with what was sealed.
    public static func open(_ bytes: [UInt8], accountID: [UInt8], key: SecretBytes) throws(AnchorError) -> (AnchorHeader, AnchorSnapshot) {
        let header = try self.header(of: bytes, accountID: accountID)
        let size = try AnchorHeader.length(of: bytes) ?? AnchorHeader.size
        let body: [UInt8]
        do { body = try AEAD.open(Array(bytes[size...]), associatedData: Array(bytes[..<size]), with: key) } catch {
            throw .doesNotOpen("\(error)")
        }
        let snapshot = try AnchorSnapshot(decoding: body)
        guard snapshot.generation == header.generation else { throw .malformed("header and snapshot name different generations") }
        return (header, snapshot)
    }
}

/// The start-up and advertisement check, exactly as the seed states it: a
/// local generation below the anchor's means this device un-saw a barrier
/// (it was put back from a backup), not that it is merely behind, because a
/// barrier commits only with every roster device present.
public enum AnchorDecision: Equatable, Sendable {
    case noAnchor
    case rolledBack(anchor: UInt64)
    case current

    public static func decide(local: UInt64, anchor: UInt64?) -> AnchorDecision {
        guard let anchor else { return .noAnchor }
        return anchor > local ? .rolledBack(anchor: anchor) : .current
    }
}
