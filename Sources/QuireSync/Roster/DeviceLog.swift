import QuireCore
import QuireCrypto
import QuireStore

/// Turns the statements of the `devices` namespace into a roster. A pure
/// function of the set of statements (never of arrival order, clocks or who
/// sent what), so every device that holds the same rows computes the same
/// roster, and a merge that only adds rows can only add what the rules say.
///
/// The rules (argued in SECURITY.md):
/// - An account-signed statement needs no signer: the account key is an
///   offline root (it lives only in the recovery file, sealed under a code
///   the user keeps). Once a `retire` statement exists (legacy accounts,
///   whose seed was on every device), an account-signed statement counts
///   only if every retire statement lists it.
/// - A device-signed statement counts only if its signer is admitted by a
///   statement that counts, and no counting revocation of its signer
///   *attacks* it. A revocation R of device D attacks every statement of D
///   that R does not list in `kept` (the statements of D the revoker had
///   accepted when it revoked): whatever D signs after it was revoked, or
///   concurrently with it, counts nowhere, including devices it admits,
///   grants, roles and revocations. One exception: a revocation of D made by
///   X is not attacked by D's revocation of X (two devices revoking each
///   other concurrently both end up revoked; the thief never wins alone).
/// - An admit under a pairing grant counts only if the grant counts, and
///   only if no other device was admitted under the same grant (one use).
/// Attacks can form cycles; the log takes the grounded (sceptical) reading:
/// a statement counts only once all its attackers are known not to count;
/// an admit left undecided does not count, a revocation left undecided does
/// (whichever way a cycle is read, the safe side is the one taken).
public struct DeviceLog: Sendable {
    public struct Entry: Sendable {
        public let id: DeviceID
        public let statement: DeviceStatement
    }

    public private(set) var entries: [DeviceID: Entry] = [:]
    public private(set) var invalidRows = 0

    public init(rows: [Row], accountKey: SigningPublicKey) {
        for row in rows { add(row, accountKey: accountKey) }
    }

    /// Reads every head of a roster row: a log statement (keyed by its id),
    /// or a legacy row (keyed by the device id) whose account-signed
    /// certificate and revocation read as account-signed statements. Every
    /// head counts, so a concurrent or later head cannot hide a revocation.
    mutating func add(_ row: Row, accountKey: SigningPublicKey) {
        var any = false
        for head in row.heads {
            guard case .device(let record) = head.content else { continue }
            if let s = try? DeviceStatement.verify(record.certificate, accountKey: accountKey) {
                let id = DeviceStatement.id(of: record.certificate)
                if id == row.key { entries[id] = Entry(id: id, statement: s); any = true }
                continue
            }
            guard let cert = try? DeviceCertificate.verify(record.certificate, accountKey: accountKey), cert.deviceID == row.key else { continue }
            var admit = DeviceStatement(kind: .admit, accountKey: accountKey.bytes, signerKey: accountKey.bytes, subject: cert.deviceID, at: cert.issuedAt)
            admit.name = cert.name; admit.subjectSigningKey = cert.signingKey; admit.subjectBoxKey = cert.boxKey; admit.role = cert.role
            let id = DeviceStatement.id(of: record.certificate)
            entries[id] = Entry(id: id, statement: admit)
            any = true
            if let signed = record.revocation, let r = DeviceRevocation.verify(signed, accountKey: accountKey), r.deviceID == cert.deviceID {
                let rid = DeviceStatement.id(of: signed)
                entries[rid] = Entry(id: rid, statement: DeviceStatement(kind: .revoke, accountKey: accountKey.bytes, signerKey: accountKey.bytes,
                                                                         subject: r.deviceID, at: r.revokedAt))
            }
        }
        if !any { invalidRows += 1 }
    }

    public enum Verdict: Sendable { case counts, void, undecided }

    /// The verdict on every statement, by the rules above.
    public func verdicts() -> [DeviceID: Verdict] {
        var verdict: [DeviceID: Verdict] = [:]
        let all = entries.values.sorted { $0.id < $1.id }
        // Account-signed statements: all count, unless retired.
        let retires = all.filter { $0.statement.kind == .retire && $0.statement.isAccountSigned }
        let allowed: Set<DeviceID>? = retires.isEmpty ? nil
            : retires.dropFirst().reduce(Set(retires[0].statement.kept)) { $0.intersection($1.statement.kept) }
        for e in all where e.statement.isAccountSigned {
            verdict[e.id] = e.statement.kind == .retire || allowed?.contains(e.id) ?? true ? .counts : .void
        }
        // One use per grant: admits of two different devices under one grant are all void.
        var grantSubjects: [DeviceID: Set<DeviceID>] = [:]
        for e in all where e.statement.kind == .admit { if let g = e.statement.grant { grantSubjects[g, default: []].insert(e.statement.subject) } }
        for e in all where e.statement.kind == .admit {
            if let g = e.statement.grant, grantSubjects[g]!.count > 1 { verdict[e.id] = .void }
        }
        let revocations = all.filter { $0.statement.kind == .revoke }
        let admits = Dictionary(grouping: all.filter { $0.statement.kind == .admit }, by: { $0.statement.subject })
        // The devices a device's admission rests on: every signer up its
        // chains of admits (whether or not they count).
        var ancestorCache: [DeviceID: Set<DeviceID>] = [:]
        func ancestors(_ device: DeviceID) -> Set<DeviceID> {
            if let known = ancestorCache[device] { return known }
            ancestorCache[device] = []  // cycles end here
            var found = Set<DeviceID>()
            for a in admits[device] ?? [] where !a.statement.isAccountSigned {
                found.insert(a.statement.signer)
                found.formUnion(ancestors(a.statement.signer))
            }
            ancestorCache[device] = found
            return found
        }
        func attackers(_ e: Entry) -> [Entry] {
            guard !e.statement.isAccountSigned else { return [] }
            let signer = e.statement.signer
            return revocations.filter { r in
                guard r.statement.subject == signer, !r.statement.kept.contains(e.id) else { return false }
                // A device cannot undo the revocation of itself or of a device
                // its own admission rests on: otherwise a device admitted by a
                // thief could revoke the revoker and the cycle would leave
                // the honest device out. (Two devices revoking each other
                // concurrently both stay revoked.)
                if e.statement.kind == .revoke, !r.statement.isAccountSigned {
                    let revoker = r.statement.signer
                    if e.statement.subject == revoker || ancestors(revoker).contains(e.statement.subject) { return false }
                }
                return true
            }
        }
        let attackersOf = Dictionary(uniqueKeysWithValues: all.map { ($0.id, attackers($0)) })
        var changed = true
        while changed {
            changed = false
            for e in all where verdict[e.id] == nil {
                let s = e.statement
                // The signer: admitted by a statement that counts?
                let signerAdmits = admits[s.signer] ?? []
                if signerAdmits.allSatisfy({ verdict[$0.id] == .void }) { verdict[e.id] = .void; changed = true; continue }
                if attackersOf[e.id]!.contains(where: { verdict[$0.id] == .counts }) { verdict[e.id] = .void; changed = true; continue }
                var grantVerdict: Verdict? = .counts
                if s.kind == .admit, let g = s.grant {
                    if let grant = entries[g], grant.statement.kind == .grant { grantVerdict = verdict[g] } else { grantVerdict = .void }
                }
                if grantVerdict == .void { verdict[e.id] = .void; changed = true; continue }
                if grantVerdict == .counts, signerAdmits.contains(where: { verdict[$0.id] == .counts }),
                   attackersOf[e.id]!.allSatisfy({ verdict[$0.id] == .void }) {
                    verdict[e.id] = .counts
                    changed = true
                }
            }
        }
        return verdict.merging(all.filter { verdict[$0.id] == nil }.map { ($0.id, Verdict.undecided) }) { a, _ in a }
    }

    /// The roster the statements make.
    public func roster(verdicts given: [DeviceID: Verdict]? = nil) -> Roster {
        let verdict = given ?? verdicts()
        var members: [DeviceID: RosterMember] = [:]
        let byTime: (Entry, Entry) -> Bool = { ($0.statement.at.seconds, $0.id) < ($1.statement.at.seconds, $1.id) }
        let all = entries.values.sorted(by: byTime)
        for e in all where e.statement.kind == .admit && members[e.statement.subject] == nil {
            let s = e.statement
            // The first admit that counts names the device; a device whose
            // every admit is void is listed as untrusted (so `quire devices`
            // can say why its frames are refused).
            let counting = all.first { $0.statement.kind == .admit && $0.statement.subject == s.subject && verdict[$0.id] == .counts }
            let chosen = counting ?? e
            guard let box = try? BoxPublicKey(bytes: chosen.statement.subjectBoxKey) else { continue }
            let revocation = all.first { $0.statement.kind == .revoke && $0.statement.subject == s.subject && verdict[$0.id] != .void
                && (verdict[$0.id] == .counts || (admits(of: $0.statement.signer, in: all).contains { verdict[$0.id] != .void } || $0.statement.isAccountSigned)) }
            let role = all.last { $0.statement.kind == .role && $0.statement.subject == s.subject && verdict[$0.id] == .counts }?.statement.role
            members[s.subject] = RosterMember(
                deviceID: s.subject, name: chosen.statement.name, boxKey: box, signingKey: chosen.statement.subjectSigningKey,
                role: role ?? chosen.statement.role, issuedAt: chosen.statement.at,
                revokedAt: revocation?.statement.at ?? (counting == nil ? chosen.statement.at : nil),
                addedBy: chosen.statement.isAccountSigned ? nil : chosen.statement.signer,
                revokedBy: revocation.map { $0.statement.isAccountSigned ? nil : $0.statement.signer } ?? nil,
                trust: counting == nil ? .untrusted : revocation != nil ? .revoked : .trusted,
                sealedBackupKey: chosen.statement.sealedBackupKey, sealedKeyRing: chosen.statement.sealedKeyRing)
        }
        return Roster(members: members)
    }

    private func admits(of device: DeviceID, in all: [Entry]) -> [Entry] {
        all.filter { $0.statement.kind == .admit && $0.statement.subject == device }
    }

    /// The ids of every statement signed by `device` that counts: what a
    /// revocation of it keeps (the device's past, as this device saw it).
    /// An invite (grant) of it that nobody used yet is left out: a lost
    /// device's pending invites die with it.
    public func countingStatements(signedBy device: DeviceID) -> [DeviceID] {
        let verdict = verdicts()
        let usedGrants = Set(entries.values.compactMap { $0.statement.kind == .admit && verdict[$0.id] == .counts ? $0.statement.grant : nil })
        return entries.values.filter { e in
            !e.statement.isAccountSigned && e.statement.signer == device && verdict[e.id] == .counts
                && (e.statement.kind != .grant || usedGrants.contains(e.id))
        }.map(\.id).sorted()
    }

    /// The statements that show `device` is not trusted, for a notice to it
    /// (`SyncEngine+RevocationNotice`): the revocations of it, or of a
    /// device its admission rests on, that count; admits of other devices
    /// under a grant it was admitted under; and, up every signer's chain,
    /// the admits (and their grants) that make those statements count. The
    /// device checks them against its own log, so nothing here needs to be
    /// believed; and it learns nothing of the log beyond them (not the
    /// devices admitted since, for one).
    public func evidence(against device: DeviceID, verdicts given: [DeviceID: Verdict]? = nil) -> Set<DeviceID> {
        let verdict = given ?? verdicts()
        let admits = Dictionary(grouping: entries.values.filter { $0.statement.kind == .admit }, by: { $0.statement.subject })
        var chain: Set<DeviceID> = [device]
        var frontier = [device]
        while let d = frontier.popLast() {
            for a in admits[d] ?? [] where !a.statement.isAccountSigned && chain.insert(a.statement.signer).inserted {
                frontier.append(a.statement.signer)
            }
        }
        let grants = Set((admits[device] ?? []).compactMap(\.statement.grant))
        var found = Set(entries.values.filter { e in
            (e.statement.kind == .revoke && chain.contains(e.statement.subject) && verdict[e.id] != .void)
                || (e.statement.kind == .admit && e.statement.subject != device && e.statement.grant.map(grants.contains) == true)
        }.map(\.id))
        var signers = Set<DeviceID>()
        var pending = Array(found)
        while let id = pending.popLast() {
            guard let s = entries[id]?.statement else { continue }
            if let g = s.grant, entries[g] != nil, found.insert(g).inserted { pending.append(g) }
            guard !s.isAccountSigned, signers.insert(s.signer).inserted else { continue }
            for a in admits[s.signer] ?? [] where verdict[a.id] == .counts && found.insert(a.id).inserted { pending.append(a.id) }
        }
        return found
    }

    /// Grants that count, by id (for admitting an enrolment).
    public func countingGrant(_ id: DeviceID) -> DeviceStatement? {
        guard let e = entries[id], e.statement.kind == .grant, verdicts()[id] == .counts else { return nil }
        return e.statement
    }

    /// True when some device was already admitted under `grant`.
    public func admitted(under grant: DeviceID) -> DeviceID? {
        entries.values.first { $0.statement.kind == .admit && $0.statement.grant == grant }?.statement.subject
    }
}
