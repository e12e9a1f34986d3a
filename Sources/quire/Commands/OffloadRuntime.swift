import Foundation
import QuireCore
import QuireCrypto
import QuireStore
import QuireSync

/// How `quire offload`, `recall` and `fsck` reach this device's sync engine.
///
/// Only one engine runs per device directory (`sync.lock`). The process
/// that runs it, `quire sync` or the mount daemon, also serves a small
/// control channel: a unix stream socket, `offload.sock` in the device
/// directory (or `/tmp/quire-<uid>/<hash>.sock` when that path is too long
/// for AF_UNIX), accepting only this user. A command talks to it when it
/// answers; when nothing answers it starts an engine in its own process for
/// the length of the command. Either way the same `OffloadJob` runs, so
/// the command behaves the same with a mount up or not.
///
/// The channel speaks JSON lines: one request, then events
/// (`outcome`, `verified`, `error`), then `done`.
final class OffloadRuntime: @unchecked Sendable {
    static let shared = OffloadRuntime()

    private let lock = NSLock()
    private var engine: SyncEngine?
    private var server: OffloadControlServer?

    /// Called by the process that runs the engine, right after it started.
    func attach(_ engine: SyncEngine, home: DeviceHome, store: ReplicaStore, log: @escaping @Sendable (String) -> Void) {
        engine.setOffloadFaults(OffloadRuntime.faultsFromEnvironment(log: log))
        let path = OffloadRuntime.socketPath(home: home)
        let server: OffloadControlServer?
        do {
            server = try OffloadControlServer.start(path: path) { connection in
                OffloadJob.serve(connection, engine: engine, store: store)
            }
        } catch {
            log("offload control channel not available (\(error)); 'quire offload' cannot reach this process")
            server = nil
        }
        lock.lock(); defer { lock.unlock() }
        self.engine = engine
        self.server = server
    }

    func detach() {
        lock.lock()
        let server = self.server
        self.server = nil
        engine = nil
        lock.unlock()
        server?.stop()
    }

    /// The mount's recall hook: through this process's own engine.
    func recall(key: RowKey, contentHash: [UInt8], timeout: Double) throws -> [UInt8] {
        lock.lock()
        let engine = self.engine
        lock.unlock()
        guard let engine else { throw OffloadError("cannot recall: sync is not running in this mount (mounted with -o nosync?)") }
        return try engine.recall(key: key, contentHash: contentHash, timeout: timeout)
    }

    /// Test-only faults, read from the environment of the process that
    /// holds bodies (see Tests/EndToEndTests/Offload*.swift):
    ///   QUIRE_TEST_CRASH_BEFORE_HOLD=1  exit after receiving a body, before committing it
    ///   QUIRE_TEST_CORRUPT_RECALL=1     answer recalls with one byte flipped
    ///   QUIRE_TEST_HOLD_DELAY_MS=N      wait N ms before committing received bodies
    static func faultsFromEnvironment(log: @escaping @Sendable (String) -> Void) -> OffloadFaults {
        let env = ProcessInfo.processInfo.environment
        var faults = OffloadFaults()
        if env["QUIRE_TEST_CRASH_BEFORE_HOLD"] == "1" {
            faults.beforeHold = {
                log("QUIRE_TEST_CRASH_BEFORE_HOLD: exiting between receiving a body and committing it")
                _exit(75)
            }
        }
        faults.corruptsRecalls = env["QUIRE_TEST_CORRUPT_RECALL"] == "1"
        faults.holdDelayMilliseconds = env["QUIRE_TEST_HOLD_DELAY_MS"].flatMap { UInt64($0) } ?? 0
        return faults
    }

    static func socketPath(home: DeviceHome) -> String {
        let absolute = home.path.hasPrefix("/") ? home.path : FileManager.default.currentDirectoryPath + "/" + home.path
        let inside = absolute + "/offload.sock"
        if inside.utf8.count < 100 { return inside }
        let dir = "/tmp/quire-\(getuid())"
        _ = mkdir(dir, 0o700)
        // Someone else's directory there would let them see our socket.
        var st = stat()
        if stat(dir, &st) != 0 || st.st_uid != getuid() || st.st_mode & 0o077 != 0 { return inside }
        return dir + "/" + Hex.encode(SHA256.hash(Array(inside.utf8)).prefix(10)) + ".sock"
    }
}

/// What a command asks of the engine, run in whichever process holds it.
enum OffloadJob {
    static func serve(_ connection: ControlConnection, engine: SyncEngine, store: ReplicaStore) {
        guard let line = connection.readLine(), let request = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
            connection.send(["event": "error", "message": "unreadable request"])
            return
        }
        perform(request, engine: engine, store: store) { connection.send($0) }
    }

    static func perform(_ request: [String: Any], engine: SyncEngine, store: ReplicaStore, emit: ([String: Any]) -> Void) {
        let timeout = (request["timeout"] as? Double) ?? 10
        let keys = ((request["keys"] as? [String]) ?? []).compactMap { RowKey(hex: $0) }
        switch request["op"] as? String {
        case "offload":
            let copies = (request["copies"] as? Int) ?? 1
            _ = engine.offload(keys, copies: copies, timeout: timeout) { emit(["event": "outcome", "outcome": $0.json]) }
        case "recall":
            let offloaded: [RowKey: OffloadedNote]
            do { offloaded = Dictionary(try store.offloadedNotes().map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a }) } catch {
                emit(["event": "error", "message": "\(error)"])
                return
            }
            var wanted: [(key: RowKey, contentHash: [UInt8], title: String, size: Int)] = []
            for key in keys {
                if let n = offloaded[key] {
                    wanted.append((n.key, n.contentHash, n.title, n.size))
                } else {
                    var title = key.hex
                    if case .note(let n)? = (try? store.row(.notebook, key))??.content { title = n.title }
                    emit(["event": "outcome", "outcome": OffloadOutcome(key: key, title: title, bytes: 0, result: .skipped,
                                                                        reason: "already resident").json])
                }
            }
            _ = engine.recall(wanted, timeout: timeout) { emit(["event": "outcome", "outcome": $0.json]) }
        case "verify":
            var items: [DeviceID: [HoldQuery.Item]] = [:]
            for (holder, list) in (request["items"] as? [String: [[String]]]) ?? [:] {
                guard let id = DeviceID(hex: holder) else { continue }
                items[id] = list.compactMap { pair in
                    guard let first = pair.first, let hash = Hex.decode(first), hash.count == 32 else { return nil }
                    return HoldQuery.Item(contentHash: hash, key: pair.count > 1 ? RowKey(hex: pair[1]) : nil)
                }
            }
            let result = engine.verifyHolds(items, timeout: timeout)
            var holders: [String: Any] = [:]
            for (id, held) in result { holders[id.hex] = held.map { $0.map { Hex.encode($0) }.sorted() } ?? NSNull() }
            emit(["event": "verified", "holders": holders])
        default:
            emit(["event": "error", "message": "unknown request \(request["op"] ?? "")"])
        }
        emit(["event": "done"])
    }
}

extension OffloadOutcome {
    var json: [String: Any] {
        var o: [String: Any] = ["key": key.hex, "title": title, "bytes": bytes, "result": result.rawValue,
                                "holders": holders.map(\.hex)]
        if let reason { o["reason"] = reason }
        return o
    }

    init?(json: [String: Any]) {
        guard let key = (json["key"] as? String).flatMap({ RowKey(hex: $0) }),
              let result = (json["result"] as? String).flatMap(Result.init(rawValue:)) else { return nil }
        self.init(key: key, title: json["title"] as? String ?? key.hex, bytes: json["bytes"] as? Int ?? 0, result: result,
                  reason: json["reason"] as? String, holders: ((json["holders"] as? [String]) ?? []).compactMap { DeviceID(hex: $0) })
    }
}

/// The command's end: the running engine's control channel, or an engine
/// started here for the length of the command.
final class OffloadChannel {
    private var connection: ControlConnection?
    private var service: SyncService?
    private let store: ReplicaStore
    /// Where the work runs, for messages.
    let runsIn: String

    init(_ inv: Invocation) throws {
        let (identity, store) = try inv.open()
        self.store = store
        let path = OffloadRuntime.socketPath(home: inv.home)
        if let connection = ControlConnection.connect(path: path) {
            self.connection = connection
            runsIn = "the running sync"
            return
        }
        do {
            service = try SyncService.start(home: inv.home, store: store, identity: identity)
        } catch let e as SyncServiceError {
            throw CommandFailure("\(e.description); its offload control channel (\(path)) does not answer")
        }
        runsIn = "this process"
        // Let the engine introduce itself before the first put goes out.
        usleep(200_000)
    }

    /// Runs one request; `onEvent` sees every event until `done`.
    func perform(_ request: [String: Any], onEvent: ([String: Any]) -> Void) throws {
        if let connection {
            guard connection.send(request) else { throw CommandFailure("the running sync closed its control channel") }
            while let line = connection.readLine() {
                guard let event = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else { continue }
                if event["event"] as? String == "done" { return }
                onEvent(event)
            }
            throw CommandFailure("the running sync stopped before answering (see its log)")
        }
        guard let service else { return }
        OffloadJob.perform(request, engine: service.engine, store: store) { event in
            if event["event"] as? String != "done" { onEvent(event) }
        }
    }

    func close() {
        connection?.close()
        connection = nil
        // Linger briefly so the last acks of siblings are not sent into the void.
        if let service { usleep(100_000); service.stop() }
        service = nil
    }

    deinit { close() }
}
