import Foundation
import QuireCore
import QuireStore
import QuireSync

/// A control request run against an engine, in whichever process holds it
/// (the daemon, or a command that started one for its own length).
public enum OffloadJob {
    static func serve(_ connection: ControlConnection, engine: SyncEngine, store: ReplicaStore) {
        guard case .some(.some(let request)) = connection.receive(ControlRequest.self) else {
            connection.send(ControlEvent.error("unreadable request (is this quire the same version as the one running?)"))
            connection.send(ControlEvent.done)
            return
        }
        perform(request, engine: engine, store: store) { connection.send($0) }
    }

    /// Runs `request`; `emit` sees every event, `done` last.
    public static func perform(_ request: ControlRequest, engine: SyncEngine, store: ReplicaStore, emit: (ControlEvent) -> Void) {
        switch request {
        case .offload(let keys, let copies, let timeout):
            _ = engine.offload(keys, copies: copies, timeout: timeout) { emit(.outcome($0)) }
        case .recall(let keys, let timeout):
            let offloaded: [RowKey: OffloadedNote]
            do { offloaded = Dictionary(try store.offloadedNotes().map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a }) } catch {
                emit(.error("\(error)"))
                emit(.done)
                return
            }
            var wanted: [(key: RowKey, contentHash: [UInt8], title: String, size: Int)] = []
            for key in keys {
                if let n = offloaded[key] {
                    wanted.append((n.key, n.contentHash, n.title, n.size))
                } else {
                    var title = key.hex
                    if case .note(let n)? = (try? store.row(.notebook, key))??.content { title = n.title }
                    emit(.outcome(OffloadOutcome(key: key, title: title, bytes: 0, result: .skipped, reason: "already resident")))
                }
            }
            _ = engine.recall(wanted, timeout: timeout) { emit(.outcome($0)) }
        case .verify(let items, let timeout):
            emit(.verified(engine.verifyHolds(items, timeout: timeout)))
        }
        emit(.done)
    }
}
