import QuireCore
import QuireCrypto

/// Device directories made before the device log kept the account seed in
/// `keys/account.key`, on every device, and invites carried it. Opening one
/// retires that key (once; the caller then deletes the file):
///
/// 1. every legacy revocation (an account-signed field inside a roster row,
///    which a row with a dominating version vector could replace) is
///    written again as its own immutable, content-addressed statement, so
///    no merge can ever drop it;
/// 2. an account-signed `retire` statement lists the account-signed
///    statements this device holds (the certificates of the devices it
///    knows, the revocations). Once any retire statement is known, an
///    account-signed statement counts only if every retire statement lists
///    it: a device lost before the upgrade still holds the seed, but what it
///    signs with it afterwards (a certificate for a new device, a
///    revocation) counts nowhere. It could sign a retire of its own that
///    lists less: that can only take trust away (a denial of service that
///    the user sees in `quire devices`), never grant it.
extension ReplicaStore {
    public func retireLegacyAccountKey(_ account: SigningKeyPair, clock: any Clock) throws(StoreError) {
        var kept: [DeviceID] = []
        var statements: [(DeviceID, DeviceRecord)] = []
        for row in try rows(.devices, from: [], to: nil) {
            for head in row.heads {
                guard case .device(let record) = head.content else { continue }
                if (try? DeviceStatement.verify(record.certificate, accountKey: account.publicKey)) != nil {
                    continue  // already a log statement (an earlier, interrupted upgrade)
                }
                guard let cert = try? DeviceCertificate.verify(record.certificate, accountKey: account.publicKey),
                      cert.deviceID == row.key else { continue }
                kept.append(DeviceStatement.id(of: record.certificate))
                if let signed = record.revocation, let revocation = DeviceRevocation.verify(signed, accountKey: account.publicKey),
                   revocation.deviceID == row.key {
                    let statement = DeviceStatement(kind: .revoke, accountKey: account.publicKey.bytes, signerKey: account.publicKey.bytes,
                                                    subject: row.key, at: revocation.revokedAt).signed(by: account)
                    kept.append(DeviceStatement.id(of: statement))
                    statements.append(DeviceStatement.row(statement, displayName: record.name))
                }
            }
        }
        var retire = DeviceStatement(kind: .retire, accountKey: account.publicKey.bytes, signerKey: account.publicKey.bytes,
                                     subject: deviceID, at: clock.now())
        retire.kept = Array(Set(kept)).sorted()
        statements.append(DeviceStatement.row(retire.signed(by: account), displayName: "account key retired"))
        for (key, record) in statements { try putRosterEntry(record, key: key) }
    }
}

extension ReplicaStore {
    /// Binds the replica to the device whose keys opened it: the first open
    /// records the device id; a later open with other keys (a key file
    /// replaced by another device's key) is refused, never taken as a new
    /// identity of the same replica.
    public func bindDevice() throws(StoreError) {
        let stored = try db.queryOne("SELECT value FROM meta WHERE name = 'device'") { $0.blob(0) } ?? nil
        if let stored {
            guard stored == deviceID.bytes else {
                throw StoreError(.corrupt, "the keys in this device directory belong to device \(deviceID.hex.prefix(12)), but the replica "
                                 + "was made by device \(Hex.encode(stored.prefix(6))): a key file was replaced. Put back the original keys "
                                 + "(from a backup of this device directory)")
            }
            return
        }
        try db.run("INSERT OR REPLACE INTO meta(name, value) VALUES ('device', ?)", [.blob(deviceID.bytes)])
    }
}

extension ReplicaStore {
    /// A device's name as the device log gives it (a legacy row keyed by its
    /// id, or the statement that admitted it), for display only.
    public func displayName(ofDevice id: DeviceID) -> String? {
        if case .device(let record)? = (try? row(.devices, id))??.content { return record.name }
        for row in (try? rows(.devices, from: [], to: nil)) ?? [] {
            if case .device(let record)? = row.content, let admit = DeviceStatement.displayedAdmit(record.certificate), admit.device == id {
                return admit.name
            }
        }
        return nil
    }
}
