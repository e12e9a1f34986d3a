import Foundation
import QuireRelay
import QuireStore
import QuireSync

/// Someone on the relay who records every frame sent to one device (its
/// channel), and whose relay can publish there: the replay and hostile-frame tests.
final class Eavesdropper {
    let identity: Identity
    let relay: any Relay
    let channel: String
    private let captured = CapturedFrames()
    private var subscription: RelaySubscription?

    /// Listens on the channel of the device at `home`, over the relay `spec`.
    init(relay spec: String, home: String) throws {
        identity = try DeviceHome(path: home).open().0
        relay = try makeRelay(from: spec)
        channel = SyncChannel.name(userIDHash: identity.userIDHash, device: identity.deviceID)
        let captured = self.captured
        subscription = try relay.subscribe(channel) { captured.add($0) }
    }

    /// Stops listening; the frames recorded, in order.
    func stop() -> [[UInt8]] {
        subscription?.cancel()
        subscription = nil
        return captured.all
    }


    deinit {
        subscription?.cancel()
        relay.close()
    }
}

final class CapturedFrames: @unchecked Sendable {
    private let lock = NSLock()
    private var frames: [[UInt8]] = []
    func add(_ f: [UInt8]) { lock.lock(); frames.append(f); lock.unlock() }
    var all: [[UInt8]] { lock.lock(); defer { lock.unlock() }; return frames }
}
