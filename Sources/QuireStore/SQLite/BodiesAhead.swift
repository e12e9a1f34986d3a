import Dispatch
import Foundation
import QuireCore
import Synchronization

/// The stored forms of the note bodies a batch write is about to store,
/// deflated on the other cores while the transaction runs: chunk by chunk
/// in the order the rows are written, so the writer seldom waits and the
/// deflate costs the batch little wall time.
///
/// The writer never waits on a chunk nobody works on: one still pending
/// when the writer reaches it is deflated by the writer itself. So a batch
/// finishes even when Dispatch's threads are all busy or blocked (on the
/// store's own lock, say), only slower.
final class BodiesAhead: Sendable {
    typealias Stored = (bytes: [UInt8], format: Int64)

    private enum Chunk {
        case pending
        case working
        case done([Stored])
    }

    /// A body's digest as a dictionary key: its first eight bytes are as
    /// good a hash as any (a SHA-256 digest is uniform), the whole compares.
    private struct DigestKey: Hashable {
        let bytes: [UInt8]

        func hash(into hasher: inout Hasher) {
            let head = bytes.withUnsafeBytes { $0.count >= 8 ? $0.loadUnaligned(as: UInt64.self) : 0 }
            hasher.combine(head)
        }
    }

    /// Body digest → (chunk, place in it).
    private let places: [DigestKey: (chunk: Int, index: Int)]
    private let bodies: [[[UInt8]]]
    /// Each chunk's state, and the first chunk a deflater may still find pending.
    private let states: Mutex<(chunks: [Chunk], cursor: Int)>
    /// Signalled once per chunk when a deflater finishes it.
    private let finished: [DispatchSemaphore]

    /// Bodies per chunk (about 10 µs each): small enough that the first
    /// chunks are ready before the writer needs them.
    static let chunkSize = 32

    /// Starts deflating the bodies `rows` bring (each row's first head,
    /// the one `writeRow` keeps in the body column).
    static func start(_ rows: [Row]) -> BodiesAhead? {
        start(notes: rows.compactMap { row in
            guard case .note(let note)? = row.heads.first?.content else { return nil }
            return note
        })
    }

    /// The same for the notes among contents about to be written here.
    static func start(_ contents: [RowContent]) -> BodiesAhead? {
        start(notes: contents.compactMap { content in
            guard case .note(let note) = content else { return nil }
            return note
        })
    }

    /// Starts deflating the note bodies of `notes` (each under its content
    /// hash, which equals its body's digest on every stored head); nil for
    /// a batch too small to share between cores: its bodies are deflated
    /// as they are written.
    private static func start(notes: [Note]) -> BodiesAhead? {
        var places: [DigestKey: (chunk: Int, index: Int)] = [:]
        places.reserveCapacity(notes.count)
        var bodies: [[[UInt8]]] = []
        for note in notes {
            guard let body = note.body, body.count >= 128 else { continue }
            let key = DigestKey(bytes: note.contentHash)
            guard places[key] == nil else { continue }    // the same body twice: deflated once
            if bodies.last.map({ $0.count == chunkSize }) ?? true { bodies.append([]) }
            places[key] = (bodies.count - 1, bodies[bodies.count - 1].count)
            bodies[bodies.count - 1].append(body)
        }
        guard places.count >= 2 * chunkSize else { return nil }
        let ahead = BodiesAhead(places: places, bodies: bodies)
        ahead.startDeflaters()
        return ahead
    }

    private init(places: [DigestKey: (chunk: Int, index: Int)], bodies: [[[UInt8]]]) {
        self.places = places
        self.bodies = bodies
        self.states = Mutex((Array(repeating: .pending, count: bodies.count), 0))
        self.finished = bodies.map { _ in DispatchSemaphore(value: 0) }
    }

    /// One deflater per core but the writer's (at least one).
    private func startDeflaters() {
        let deflaters = max(1, min(bodies.count, ProcessInfo.processInfo.activeProcessorCount - 1))
        for _ in 0..<deflaters {
            DispatchQueue.global(qos: .userInitiated).async { [self] in
                while let chunk = claimNext() {
                    let stored = bodies[chunk].map { StoredBody.encode($0) }
                    states.withLock { $0.chunks[chunk] = .done(stored) }
                    finished[chunk].signal()
                }
            }
        }
    }

    /// The batch is written (or failed): the deflaters take no more chunks.
    func stop() {
        states.withLock { $0.cursor = $0.chunks.count }
    }

    /// The first pending chunk, now marked as worked on.
    private func claimNext() -> Int? {
        states.withLock { states in
            while states.cursor < states.chunks.count {
                let chunk = states.cursor
                states.cursor += 1
                if case .pending = states.chunks[chunk] {
                    states.chunks[chunk] = .working
                    return chunk
                }
            }
            return nil
        }
    }

    /// The stored form of the body with digest `hash`, if it is one of the
    /// batch's (nil: the caller deflates it).
    func stored(_ hash: [UInt8]) -> Stored? {
        guard let place = places[DigestKey(bytes: hash)] else { return nil }
        enum Next { case have(Stored), deflateHere, wait }
        let next = states.withLock { states -> Next in
            switch states.chunks[place.chunk] {
            case .done(let stored): return .have(stored[place.index])
            case .working: return .wait
            case .pending:
                states.chunks[place.chunk] = .working
                return .deflateHere
            }
        }
        switch next {
        case .have(let stored):
            return stored
        case .deflateHere:
            let stored = bodies[place.chunk].map { StoredBody.encode($0) }
            states.withLock { $0.chunks[place.chunk] = .done(stored) }
            return stored[place.index]
        case .wait:
            finished[place.chunk].wait()
            finished[place.chunk].signal()    // for the chunk's other bodies
            return states.withLock { states -> Stored? in
                if case .done(let stored) = states.chunks[place.chunk] { return stored[place.index] }
                return nil
            }
        }
    }
}
