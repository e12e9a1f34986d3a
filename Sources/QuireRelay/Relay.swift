import Synchronization

/// A byte transport with no mailbox: a frame published on a channel reaches
/// whoever is subscribed to that channel right now, at most once each, and
/// nothing is stored. Frames may be lost, duplicated or reordered (lossy by
/// contract: the sync layer retries and its merges are idempotent).
///
/// Frames are hostile bytes: a relay never looks inside them.
public protocol Relay: AnyObject, Sendable {
    /// The largest frame `publish` accepts, in bytes; callers chunk above it.
    var maxFrameSize: Int { get }

    /// Sends `frame` to everyone listening on `channel` now. Not an error if
    /// nobody listens: the frame is simply gone. Throws for a frame above
    /// `maxFrameSize`, an invalid channel, a closed relay, or (for a server
    /// relay) a server that cannot be reached.
    func publish(_ frame: [UInt8], to channel: String) throws

    /// Delivers every frame published on `channel` from now on to `handler`,
    /// one at a time, on a thread the relay owns. Listening has begun when
    /// this returns. Keep the subscription: cancelling it, or dropping the
    /// last reference to it, stops delivery.
    func subscribe(_ channel: String, handler: @escaping @Sendable ([UInt8]) -> Void) throws -> RelaySubscription

    /// Cancels every subscription and releases the relay's resources. Later
    /// calls to `publish` and `subscribe` throw.
    func close()
}

/// A live subscription. `cancel()` is idempotent; once it returns (from any
/// thread but the handler's own), the handler is not running and will not run
/// again. Dropping the last reference cancels too, so a forgotten
/// subscription cannot leak a thread.
public final class RelaySubscription: Sendable {
    public let channel: String
    private let onCancel: Mutex<(@Sendable () -> Void)?>

    public init(channel: String, onCancel: @escaping @Sendable () -> Void) {
        self.channel = channel
        self.onCancel = Mutex(onCancel)
    }

    public var isCancelled: Bool { onCancel.withLock { $0 == nil } }

    public func cancel() {
        let action = onCancel.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        action?()
    }

    deinit { cancel() }
}

/// What went wrong in a relay, in one line: what failed, on what, and why.
public struct RelayError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case frameTooLarge, invalidChannel, invalidAddress, unreachable, closed, systemCall, serverError
        }
        private let kind: Kind

        /// The frame is larger than `maxFrameSize`: chunk it.
        public static let frameTooLarge = Code(kind: .frameTooLarge)
        /// The channel name cannot be used (empty, too long, or has `/`).
        public static let invalidChannel = Code(kind: .invalidChannel)
        /// The relay spec or server URL cannot be parsed.
        public static let invalidAddress = Code(kind: .invalidAddress)
        /// The relay server cannot be reached now; frames meanwhile are lost.
        public static let unreachable = Code(kind: .unreachable)
        /// The relay was closed.
        public static let closed = Code(kind: .closed)
        /// An operating-system call failed.
        public static let systemCall = Code(kind: .systemCall)
        /// The relay server answered with an error.
        public static let serverError = Code(kind: .serverError)

        public var description: String {
            switch kind {
            case .frameTooLarge: "frame too large"
            case .invalidChannel: "invalid channel"
            case .invalidAddress: "invalid address"
            case .unreachable: "unreachable"
            case .closed: "closed"
            case .systemCall: "system call failed"
            case .serverError: "server error"
            }
        }
    }

    public let code: Code
    /// The whole line, e.g. "cannot reach Redis at 127.0.0.1:6390: connection refused".
    public let message: String
    /// The errno of a failed system call, if that is the cause.
    public let errno: Int32?

    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String { message }
}

/// Channel names become directory names in `LocalRelay` and must mean the
/// same on every relay, so every relay accepts exactly the same set.
public enum RelayChannel {
    public static let maxLength = 200

    public static func validate(_ channel: String) throws {
        let utf8 = channel.utf8
        guard !utf8.isEmpty, utf8.count <= maxLength else {
            throw RelayError(.invalidChannel, "invalid relay channel \"\(channel.prefix(40))\": must be 1 to \(maxLength) bytes")
        }
        guard channel != ".", channel != "..", !channel.hasPrefix("."),
              !utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == 0 || $0 < 0x20 }) else {
            throw RelayError(.invalidChannel,
                             "invalid relay channel \"\(channel.prefix(40))\": no '/', control bytes or leading '.'")
        }
    }
}

/// The live subscriptions of one relay, so `close()` can cancel them all.
/// Held weakly: a subscription dropped by its owner cancels itself.
final class SubscriptionRegistry: Sendable {
    private final class WeakSubscription { weak var value: RelaySubscription?; init(_ value: RelaySubscription) { self.value = value } }
    private struct State {
        var nextID = 0
        var live: [Int: WeakSubscription] = [:]
        var isClosed = false
    }
    private let state = Mutex(State())

    var isClosed: Bool { state.withLock { $0.isClosed } }

    /// Wraps `cancel` in a subscription and records it; if the relay closed
    /// meanwhile, cancels at once and returns nil.
    func register(channel: String, cancel: @escaping @Sendable () -> Void) -> RelaySubscription? {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        let subscription = RelaySubscription(channel: channel) { [weak self] in
            cancel()
            self?.state.withLock { _ = $0.live.removeValue(forKey: id) }
        }
        let accepted = state.withLock { state -> Bool in
            guard !state.isClosed else { return false }
            state.live[id] = WeakSubscription(subscription)
            return true
        }
        if !accepted {
            subscription.cancel()
            return nil
        }
        return subscription
    }

    /// Marks the relay closed and cancels every live subscription.
    func closeAll() {
        let live = state.withLock { state -> [RelaySubscription] in
            state.isClosed = true
            defer { state.live = [:] }
            return state.live.values.compactMap(\.value)
        }
        for subscription in live { subscription.cancel() }
    }
}
