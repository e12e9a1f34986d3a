import QuireCore

/// Which barrier round committed this device's generation: the round's
/// nonce, kept with the generation it belongs to (meta `generation_round`,
/// `generation hex`). Anchors name the round that wrote them, and at one
/// generation only one round committed, so a device behind the fleet can
/// tell the committed round's anchor from one of a round abandoned after
/// its upload, which a file-sync service that is behind may still show.
/// A record of another generation than the device's (a replica put back
/// under newer preferences, a crash between the two writes) says nothing.
public struct GenerationRound: Equatable, Sendable {
    public var generation: UInt64
    public var nonce: [UInt8]

    public init(generation: UInt64, nonce: [UInt8]) {
        self.generation = generation
        self.nonce = nonce
    }
}

extension ReplicaStore {
    /// The round recorded for `generation`, if that is the one recorded.
    public func generationRound(at generation: UInt64) throws(StoreError) -> [UInt8]? {
        try read { () throws(StoreError) -> [UInt8]? in
            guard let text = try db.queryOne("SELECT value FROM meta WHERE name = 'generation_round'", [], { $0.text(0) ?? "" }) else { return nil }
            let parts = text.split(separator: " ")
            guard parts.count == 2, UInt64(parts[0]) == generation, let nonce = Hex.decode(String(parts[1])), nonce.count == 16 else { return nil }
            return nonce
        }
    }

    /// Records the round that committed `generation` (nil: not known, which
    /// forgets any earlier record).
    public func setGenerationRound(_ round: GenerationRound?) throws(StoreError) {
        try write { ctx in
            if let round, round.nonce.count == 16 {
                try ctx.db.run("INSERT OR REPLACE INTO meta(name, value) VALUES ('generation_round', ?)",
                               [.text("\(round.generation) \(Hex.encode(round.nonce))")])
            } else {
                try ctx.db.run("DELETE FROM meta WHERE name = 'generation_round'")
            }
        }
    }
}
