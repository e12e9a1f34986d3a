import Foundation
import QuireCore
import QuireCrypto
import QuireStore
import QuireSync

/// `quire init --from-cloud DIR`: a new device of an account whose every
/// device is lost, rebuilt from the recovery file and the newest anchor.
enum CloudRecovery {
    static func rebuild(from cloud: String, name: String, role: Prefs.Role, relay: String?, json: Bool, home: DeviceHome) throws {
        if home.exists { throw CommandFailure("\(home.path) already holds a quire device; choose another --home") }
        let accounts = RecoveryFile.accounts(in: cloud)
        guard let accountID = accounts.first else { throw CommandFailure("\(cloud) holds no recovery file (quire-recovery-*.qrecovery)") }
        guard accounts.count == 1 else { throw CommandFailure("\(cloud) holds recovery files of \(accounts.count) accounts; keep only the one to rebuild") }
        let code: String
        if let env = Passphrase.takeFromEnvironment("QUIRE_RECOVERY_CODE") {
            code = env
        } else {
            code = try Passphrase.read(file: nil, confirm: false)
        }
        let keys: (account: SigningKeyPair, backupKey: SecretBytes)
        do { keys = try RecoveryFile.open(cloud: cloud, accountID: accountID, code: code) } catch { throw CommandFailure("\(error)") }
        let folder = CloudFolder(path: cloud, accountID: accountID)
        let newest: CloudRebuild.Found?
        do {
            newest = try CloudRebuild.newest(in: folder, account: keys.account, original: keys.backupKey)
        } catch let refusal as CloudRebuild.EveryAnchorRefused {
            throw CommandFailure("\(cloud) holds anchors of this account, but none may be used: \(refusal). An anchor sealed before a "
                                 + "revocation could be the revoked device's; nothing was created. If a device of the account is left, "
                                 + "its next barrier writes an anchor under the new key (or 'quire restore' puts a device back from a backup)")
        }
        guard let found = newest else {
            throw CommandFailure("\(cloud) holds no anchor that opens with this account's key: there is nothing to rebuild from")
        }
        let (header, snapshot) = (found.header, found.snapshot)
        for refusal in found.refused { Output.error("not used: " + refusal) }
        for caution in found.cautions { Output.error("caution: " + caution) }
        let identity = Identity(account: keys.account, deviceSigning: SigningKeyPair(), deviceBox: BoxKeyPair(), backupKey: keys.backupKey)
        let (_, store) = try home.create(name: name, role: role, identity: identity)
        // The rotation keys first: the rebuilt device writes under them.
        if !found.ring.isEmpty { try found.ring.save(keysPath: home.keysPath) }
        try home.prefs.update { p in
            p.cloud = cloud
            if let relay { p.relay = relay }
        }
        let report = try store.recover(from: snapshot.rows, graveyard: snapshot.graveyard)
        try home.prefs.setGeneration(header.generation)
        try store.setGenerationRound(snapshot.round.map { GenerationRound(generation: header.generation, nonce: $0) })
        let pointers = snapshot.rows.filter { if case .note(let n)? = $0.content { return n.body == nil } else { return false } }
        if json {
            Output.json(["home": home.path, "device": identity.deviceID.hex, "account": Hex.encode(accountID),
                         "generation": header.generation, "rows": report.joined, "offloadedBodies": pointers.count])
        } else {
            Output.line("rebuilt the account as device '\(name)' (\(identity.deviceID.hex.prefix(12))) in \(home.path) from the anchor "
                        + "at generation \(header.generation), written \(DateText.format(header.writtenAt.seconds, time: true)): \(report.joined) rows")
            if pointers.isEmpty {
                Output.line("every note body was in the anchor")
            } else {
                Output.line("\(pointers.count) note bodies were offloaded and are not in the anchor; they come back from the homebase if it survives "
                            + "('quire recall --all' once it is online): " + pointers.prefix(5).compactMap { $0.content?.displayName }.joined(separator: ", ")
                            + (pointers.count > 5 ? ", …" : ""))
            }
            Output.line("the lost devices are still on the roster: 'quire devices revoke NAME' takes each off, so barriers can collect again")
        }
    }
}
