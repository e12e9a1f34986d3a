import Foundation
import QuireCore
import QuireStore
import QuireSync

/// A command's end of the control channel: the running daemon's, or an
/// engine started in this process for the length of the command when no
/// daemon answers.
public final class ControlClient {
    private var connection: ControlConnection?
    private var service: SyncService?
    private let store: ReplicaStore
    /// Where the work runs, for messages.
    public let runsIn: String

    public init(home: DeviceHome, store: ReplicaStore, identity: Identity) throws {
        self.store = store
        let path = OffloadRuntime.socketPath(home: home)
        if let connection = ControlConnection.connect(path: path) {
            self.connection = connection
            runsIn = "the running sync"
            return
        }
        do {
            service = try SyncService.start(home: home, store: store, identity: identity)
        } catch let e as DeviceLockHeld {
            throw DaemonError("\(e.description); its control channel (\(path)) does not answer")
        } catch let e as SyncServiceError {
            throw DaemonError("\(e.description); its control channel (\(path)) does not answer")
        }
        runsIn = "this process"
        // Let the engine introduce itself before the first request goes out.
        usleep(200_000)
    }

    /// Runs one request; `onEvent` sees every event before `done`.
    public func perform(_ request: ControlRequest, onEvent: (ControlEvent) -> Void) throws(DaemonError) {
        if let connection {
            guard connection.send(request) else { throw DaemonError("the running sync closed its control channel") }
            while let next = connection.receive(ControlEvent.self) {
                guard let event = next else { throw DaemonError("the running sync answered in a form this quire does not read (a different version?)") }
                if event == .done { return }
                onEvent(event)
            }
            throw DaemonError("the running sync stopped before answering (see its log)")
        }
        guard let service else { return }
        OffloadJob.perform(request, engine: service.engine, store: store) { event in
            if event != .done { onEvent(event) }
        }
    }

    public func close() {
        connection?.close()
        connection = nil
        // Linger briefly so the last acks of siblings are not sent into the void.
        if let service { usleep(100_000); service.stop() }
        service = nil
    }

    deinit { close() }
}
