import QuireCore
import QuireCrypto
import QuireStore

extension SubKind {
    /// Sent to a device this one no longer trusts (revoked, or its admission
    /// void), in answer to a frame of it that was refused, or when the
    /// revocation is learned: `{1: [roster rows]}`, the statements that show
    /// it (`DeviceLog.evidence`). Without it a revoked device of an account
    /// with no cloud folder never learns it and believes its edits sync.
    /// Older devices count it as an unknown sub-kind and go on as before.
    public static let revocationNotice = SubKind("revoked_notice")
}

/// The rows a `revoked_notice` carries. Nothing in it is believed: the
/// receiver merges the rows as it would a reconcile's (each statement
/// verified) and then reads its own roster. A bare "you are revoked" from
/// a relay, or from a device it does not trust, moves nothing.
struct RevocationNotice: Equatable, Sendable {
    static let maxRows = IntroduceMessage.maxRows

    var rows: [Row]

    func encoded() -> [UInt8] {
        CBORWriter.encode(.map([(.unsigned(1), .array(rows.prefix(Self.maxRows).map(RowWire.encode)))]))
    }

    static func decode(_ bytes: [UInt8]) throws(CBORError) -> RevocationNotice {
        let f = try CBORReader.decode(bytes, limits: messageLimits).asFieldMap()
        let items = try f.required(1, "rows").asArray()
        guard items.count <= maxRows else { throw .invalidValue("too many roster rows") }
        var rows: [Row] = []
        for item in items {
            guard let row = RowWire.decode(item, namespace: .devices) else { throw .invalidValue("roster row") }
            rows.append(row)
        }
        return RevocationNotice(rows: rows)
    }
}

/// When this device last told a revoked device, so that neither a revoked
/// device nor a relay replaying its frames can make it send without bound:
/// at most one notice per device every `perDeviceMs`, and, before the
/// sender of a refused frame is even looked for (a few X25519 operations),
/// at most one look every `anyMs` whoever sent it.
struct RevocationNoticeThrottle: Sendable {
    static let perDeviceMs: UInt64 = 5_000
    static let anyMs: UInt64 = 500
    /// Devices remembered; past it the oldest answers are forgotten (only
    /// revoked devices of the roster ever get here, a handful).
    static let maxTracked = 64

    private var lastLookMs: UInt64?
    private var lastNoticeMs: [DeviceID: UInt64] = [:]

    /// Whether a refused frame is worth finding the sender of now.
    mutating func mayLook(nowMs: UInt64) -> Bool {
        if let last = lastLookMs, nowMs &- last < Self.anyMs { return false }
        lastLookMs = nowMs
        return true
    }

    /// Whether `device` may be told now; if so, records that it is.
    mutating func mayTell(_ device: DeviceID, nowMs: UInt64) -> Bool {
        if let last = lastNoticeMs[device], nowMs &- last < Self.perDeviceMs { return false }
        if lastNoticeMs.count >= Self.maxTracked, let oldest = lastNoticeMs.min(by: { $0.value < $1.value })?.key {
            lastNoticeMs[oldest] = nil
        }
        lastNoticeMs[device] = nowMs
        return true
    }
}

extension SyncEngine {
    // MARK: Telling a revoked device

    /// A frame was refused as a revoked device's: tell that device, with
    /// the statements that revoked it. Only a frame sealed with the revoked
    /// device's own key counts as its (an anonymous introduction can claim
    /// any sender), and the throttle bounds what its frames can cost us.
    func answerRevokedFrame(_ bytes: [UInt8], nowMs: UInt64) {
        guard revocationNotices.mayLook(nowMs: nowMs), let device = link.revokedSender(of: bytes, roster: roster) else { return }
        tellRevoked(device, nowMs: nowMs)
    }

    /// Seals the evidence of `device`'s revocation to it (never through
    /// `send`, which serves trusted siblings only). Silent on failure: the
    /// device's next frame asks again.
    func tellRevoked(_ device: DeviceID, nowMs: UInt64) {
        guard phase != .revoked, let member = roster[device], member.isRevoked, device != me.deviceID,
              revocationNotices.mayTell(device, nowMs: nowMs) else { return }
        do {
            let held = try store.rows(.devices, from: [], to: nil)
            let log = DeviceLog(rows: held, accountKey: accountKey)
            let evidence = log.evidence(against: device)
            guard !evidence.isEmpty else { return }
            // A row is sent when it holds a statement of the evidence (a
            // legacy row, keyed by device id, holds several).
            let rows = held.filter { row in
                !DeviceLog(rows: [row], accountKey: accountKey).entries.keys.allSatisfy { !evidence.contains($0) }
            }
            let payload = RevocationNotice(rows: rows).encoded()
            deps.trace?("out \(SubKind.revocationNotice) \(payload.count) B to \(name(of: device))")
            let frames = link.seal(SyncMessage(subKind: .revocationNotice, payload: payload), to: device, boxKey: member.boxKey,
                                   messageID: deps.random.bytes(8))
            let channel = SyncChannel.name(userIDHash: me.userIDHash, device: device)
            for frame in frames {
                try deps.relay.publish(frame, to: channel)
                metrics.framesOut += 1
                metrics.bytesOut += frame.count
            }
            metrics.revocationNoticesSent += 1
        } catch {
            report("cannot tell \(name(of: device)) that it was revoked", error)
        }
    }

    // MARK: Being told

    /// A trusted sibling says this device is revoked. Its rows are merged
    /// like a reconcile's (each statement verified, none believed for who
    /// sent it); only the roster they then make can revoke this device.
    func handleRevocationNotice(_ notice: RevocationNotice, from sender: DeviceID, nowMs: UInt64) throws {
        let rows = certifiedRows(rowsWithinLimits(notice.rows.filter { $0.namespace == .devices }, from: sender))
        if !rows.isEmpty {
            let (applied, _) = try store.apply(rows, from: sender)
            metrics.rowsApplied += applied
            if applied > 0 {
                invalidateDigest()
                markDirty(nowMs: nowMs)
                lastSeq = (try? store.changeSequence()) ?? lastSeq
                try reloadRoster()
            }
        }
        if phase != .revoked {
            noteOnce("\(name(of: sender)) says this device is no longer trusted, but the statements it sent do not show it here: ignored")
        }
    }

    /// This device's revocation as its own log shows it (nil: it is trusted).
    var ownRevocation: SyncStatus.Revocation? {
        guard let mine = roster[me.deviceID], mine.isRevoked else { return nil }
        return SyncStatus.Revocation(by: mine.revokedBy?.hex, byName: mine.revokedBy.flatMap { roster[$0]?.name },
                                     at: mine.revokedAt?.seconds, admissionVoid: mine.trust != .revoked)
    }
}
