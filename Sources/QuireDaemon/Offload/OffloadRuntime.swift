import Foundation
import QuireCore
import QuireCrypto
import QuireStore
import QuireSync

/// How `quire offload`, `recall` and `fsck` reach this device's engine, and
/// how the mount's reads recall offloaded bodies: one per running engine.
///
/// Only one engine runs per device directory (`sync.lock`). The process
/// that runs it (`quire sync` or the mount daemon) serves a small control
/// channel: a unix stream socket, `offload.sock` in the device directory
/// (or `/tmp/quire-<uid>/<hash>.sock` when that path is too long for
/// AF_UNIX), accepting only this user. A command talks to it when it
/// answers (`ControlClient`); when nothing answers it starts an engine in
/// its own process for the length of the command. Either way the same
/// `OffloadJob` runs, so the command behaves the same with a mount up or not.
final class OffloadRuntime: @unchecked Sendable {
    let engine: SyncEngine
    private let server: ControlServer?

    init(engine: SyncEngine, home: DeviceHome, store: ReplicaStore, log: @escaping @Sendable (String) -> Void) {
        engine.setOffloadFaults(TestFaults.offloadFaults(log: log))
        self.engine = engine
        let path = OffloadRuntime.socketPath(home: home)
        do {
            server = try ControlServer.start(path: path) { connection in
                OffloadJob.serve(connection, engine: engine, store: store)
            }
        } catch {
            log("control channel not available (\(error)); 'quire offload' cannot reach this process")
            server = nil
        }
    }

    func stop() { server?.stop() }

    static func socketPath(home: DeviceHome) -> String {
        let socket = home.controlSocketPath
        let inside = socket.hasPrefix("/") ? socket : FileManager.default.currentDirectoryPath + "/" + socket
        if inside.utf8.count < 100 { return inside }
        let dir = "/tmp/quire-\(getuid())"
        _ = mkdir(dir, 0o700)
        // Someone else's directory there would let them see our socket.
        var st = stat()
        if stat(dir, &st) != 0 || st.st_uid != getuid() || st.st_mode & 0o077 != 0 { return inside }
        return dir + "/" + Hex.encode(SHA256.hash(Array(inside.utf8)).prefix(10)) + ".sock"
    }
}

/// Faults injected by tests into a real daemon, from its environment (see
/// Tests/EndToEndTests/Offload*.swift). Never set in normal use.
enum TestFaults {
    ///   QUIRE_TEST_CRASH_BEFORE_HOLD=1  exit after receiving a body, before committing it
    ///   QUIRE_TEST_CORRUPT_RECALL=1     answer recalls with one byte flipped
    ///   QUIRE_TEST_HOLD_DELAY_MS=N      wait N ms before committing received bodies
    static func offloadFaults(log: @escaping @Sendable (String) -> Void) -> OffloadFaults {
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
}
