import Synchronization

/// A relay through Redis pub/sub, for devices on several machines. Redis
/// PUBLISH forwards to current subscribers and keeps nothing, which is
/// exactly the no-mailbox contract; we run no server of our own.
///
/// Publishing uses one connection under a lock. Each subscription has its own
/// connection and reader thread, which reconnects with backoff and subscribes
/// again if the server goes away; frames published during the outage are
/// lost, as the contract allows.
public final class RedisRelay: Relay {
    /// 1 MiB: far below Redis's 512 MiB bulk limit and the default 8 MiB
    /// pub/sub client output soft limit, so a slow subscriber is not cut off
    /// by a burst of a few frames.
    public static let defaultMaxFrameSize = 1024 * 1024

    public let endpoint: RedisEndpoint
    public let maxFrameSize: Int

    private struct Publisher {
        var connection: RedisConnection?
        var retryAt: ContinuousClock.Instant?
        var backoff: Duration = .milliseconds(100)
        var lastFailure: RelayError?
        var isClosed = false
    }
    private let publisher: Mutex<Publisher>
    private let subscriptions = SubscriptionRegistry()

    /// Connects to `url` (`redis://host:port`). Throws at once for a bad URL
    /// or a server that cannot be reached, so a misconfiguration shows at start.
    public init(url: String, maxFrameSize: Int = RedisRelay.defaultMaxFrameSize) throws {
        endpoint = try RedisEndpoint(url: url)
        self.maxFrameSize = maxFrameSize
        let connection = try RedisConnection(endpoint: endpoint)
        connection.setTimeout(milliseconds: Self.commandTimeoutMilliseconds)
        publisher = Mutex(Publisher(connection: connection))
    }

    deinit { close() }

    /// Long enough for a 1 MiB frame over a slow link, short enough that a
    /// dead server does not hold the publisher for long.
    static let commandTimeoutMilliseconds = 5000
    static let maxBackoff: Duration = .seconds(2)

    public func publish(_ frame: [UInt8], to channel: String) throws {
        try RelayChannel.validate(channel)
        guard frame.count <= maxFrameSize else {
            throw RelayError(.frameTooLarge, "frame of \(frame.count) bytes exceeds the Redis relay's \(maxFrameSize)-byte maximum: chunk it")
        }
        let arguments = [Array("PUBLISH".utf8), Array(channel.utf8), frame]
        try publisher.withLock { state in
            guard !state.isClosed else { throw RelayError(.closed, "Redis relay to \(endpoint) is closed") }
            // A connection that broke since the last publish fails once; one
            // retry on a fresh connection tells "server restarted" from "server down".
            for attempt in 0..<2 {
                let connection = try connectedPublisher(&state)
                do {
                    if case .error(let message) = try connection.command(arguments) {
                        throw RelayError(.serverError, "Redis at \(endpoint) refused PUBLISH: \(message)")
                    }
                    return
                } catch let error as RelayError where error.code == .unreachable {
                    state.connection = nil
                    if attempt == 1 { throw error }
                }
            }
        }
    }

    /// The publisher's connection, reconnecting if the backoff allows;
    /// within the backoff it throws the last failure at once, so a dead
    /// server costs callers nothing but the error.
    private func connectedPublisher(_ state: inout Publisher) throws -> RedisConnection {
        if let connection = state.connection { return connection }
        if let retryAt = state.retryAt, ContinuousClock.now < retryAt, let failure = state.lastFailure { throw failure }
        do {
            let connection = try RedisConnection(endpoint: endpoint)
            connection.setTimeout(milliseconds: Self.commandTimeoutMilliseconds)
            state.connection = connection
            state.retryAt = nil
            state.backoff = .milliseconds(100)
            return connection
        } catch let error as RelayError {
            state.lastFailure = error
            state.retryAt = ContinuousClock.now + state.backoff
            state.backoff = min(state.backoff * 2, Self.maxBackoff)
            throw error
        }
    }

    public func subscribe(_ channel: String, handler: @escaping @Sendable ([UInt8]) -> Void) throws -> RelaySubscription {
        try RelayChannel.validate(channel)
        guard !subscriptions.isClosed else { throw RelayError(.closed, "Redis relay to \(endpoint) is closed") }
        // Subscribe before returning, so a frame published right after is heard.
        let first = try Self.subscribedConnection(endpoint: endpoint, channel: channel)
        let thread = try ReceiveThread()
        let endpoint = self.endpoint, maxFrameSize = self.maxFrameSize
        try thread.start { [thread] in
            Self.receive(first: first, endpoint: endpoint, channel: channel, maxFrameSize: maxFrameSize,
                         thread: thread, handler: handler)
        }
        guard let subscription = subscriptions.register(channel: channel, cancel: { thread.stop() }) else {
            throw RelayError(.closed, "Redis relay to \(endpoint) is closed")
        }
        return subscription
    }

    private static func subscribedConnection(endpoint: RedisEndpoint, channel: String) throws -> RedisConnection {
        let connection = try RedisConnection(endpoint: endpoint)
        let reply = try connection.command([Array("SUBSCRIBE".utf8), Array(channel.utf8)])
        guard case .array(let parts) = reply, case .string(let kind)? = parts.first, kind == Array("subscribe".utf8) else {
            throw RelayError(.serverError, "Redis at \(endpoint) did not confirm SUBSCRIBE \(channel): \(reply)")
        }
        return connection
    }

    /// The reader thread: delivers messages, and on a lost connection
    /// reconnects with doubling backoff until it is stopped.
    private static func receive(first: RedisConnection, endpoint: RedisEndpoint, channel: String, maxFrameSize: Int,
                                thread: ReceiveThread, handler: @Sendable ([UInt8]) -> Void) {
        var connection: RedisConnection? = first
        var backoff: Int32 = 50
        while !thread.isStopping {
            guard let live = connection else {
                guard thread.sleep(milliseconds: backoff) else { return }
                backoff = min(backoff * 2, Int32(maxBackoff.components.seconds * 1000))
                if let fresh = try? subscribedConnection(endpoint: endpoint, channel: channel) {
                    connection = fresh
                    backoff = 50
                }
                continue
            }
            do {
                while let reply = try live.bufferedReply() {
                    // ["message", channel, payload]; confirmations and pongs are skipped.
                    guard case .array(let parts) = reply, parts.count == 3, case .string(let kind) = parts[0],
                          kind == Array("message".utf8), case .string(let payload) = parts[2] else { continue }
                    if payload.count <= maxFrameSize && !thread.isStopping { handler(payload) }
                }
                switch thread.wait(readable: live.fileDescriptor) {
                case .stopping: return
                case .timedOut: continue
                case .readable: try live.readAvailable()
                }
            } catch {
                connection = nil
            }
        }
    }

    public func close() {
        subscriptions.closeAll()
        publisher.withLock { state in
            state.isClosed = true
            state.connection = nil
        }
    }
}
