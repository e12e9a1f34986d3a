import QuireCore

/// Reads the sync layer needs beyond the core API. Additive only.
extension ReplicaStore {
    /// The tombstones of a namespace whose keys lie in [lower, upper), in key
    /// order: the ones a reconcile response carries for a differing range.
    public func tombstones(_ ns: Namespace, from lower: [UInt8], to upper: [UInt8]?) throws(StoreError) -> [Row] {
        try read { () throws(StoreError) -> [Row] in
            var sql = "SELECT key, vv FROM rows WHERE ns = ? AND tombstone = 1 AND key >= ?"
            var args: [SQLValue] = [.int(Int64(ns.rawValue)), .blob(lower)]
            if let upper { sql += " AND key < ?"; args.append(.blob(upper)) }
            sql += " ORDER BY key"
            return try db.query(sql, args) { s throws(StoreError) in
                do {
                    return Row.tombstone(ns, ID16(bytes: s.blob(0) ?? [])!, vector: try VersionVector(cbor: try CBORReader.decode(s.blob(1) ?? [])))
                } catch { throw StoreError(.corrupt, "\(path): tombstone in \(ns) does not decode: \(error)") }
            }
        }
    }

    /// The id of the newest outbox record, or nil when the outbox is empty:
    /// a cheap poll for "local edits happened that no advertisement covers".
    public func outboxHighWater() throws(StoreError) -> Int64? {
        try read { () throws(StoreError) -> Int64? in
            try db.queryOne("SELECT max(id) FROM outbox") { $0.isNull(0) ? nil : $0.int(0) } ?? nil
        }
    }
}

extension Identity {
    /// This device's certificate, signed by the account key: what its roster
    /// row carries (tests, benchmarks and the simulator build rosters with it).
    public func signedCertificate(name: String, role: String = "device", issuedAt: Timestamp) -> [UInt8] {
        DeviceCertificate(accountKey: account.publicKey.bytes, deviceID: deviceID, name: name,
                          signingKey: deviceSigning.publicKey.bytes, boxKey: deviceBox.publicKey.bytes,
                          role: role, issuedAt: issuedAt).signed(by: account)
    }
}
