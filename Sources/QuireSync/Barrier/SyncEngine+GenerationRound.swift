import QuireCore
import QuireStore

/// Which round committed this device's generation (`GenerationRound`): told
/// to siblings in every digest and snapshot, recorded at each commit and
/// each recovery, so a device behind the fleet recovers only from the
/// anchor of the round the fleet committed.
extension SyncEngine {
    /// The nonce of the round that committed `generation`, if known here.
    func roundOfGeneration(_ generation: UInt64) -> [UInt8]? {
        if let cached = roundCache, cached.generation == generation { return cached.nonce }
        let nonce = (try? store.generationRound(at: generation)) ?? nil
        roundCache = (generation, nonce)
        return nonce
    }

    /// Records the round that committed `generation` (nil: not known).
    func noteRound(_ nonce: [UInt8]?, of generation: UInt64) throws {
        try store.setGenerationRound(nonce.map { GenerationRound(generation: generation, nonce: $0) })
        roundCache = (generation, nonce?.count == 16 ? nonce : nil)
    }
}
