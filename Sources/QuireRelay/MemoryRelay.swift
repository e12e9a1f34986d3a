import Synchronization

/// An in-memory relay for tests and the deterministic fleet simulator.
///
/// `publish` does not deliver: it queues one pending delivery per current
/// subscriber (no mailbox: later subscribers get nothing). The driver then
/// decides, step by step, what the network does with each one: deliver it,
/// drop it, duplicate it, or take them out of order. Handlers run on the
/// driver's thread, inside `deliver…`, never inside `publish`.
public final class MemoryRelay: Relay {
    /// One frame on its way to one subscriber.
    public struct Delivery: Sendable, Equatable {
        public let channel: String
        public let frame: [UInt8]
        /// Which subscription it is for, in subscription order from 1.
        public let subscriber: Int
    }

    public let maxFrameSize: Int

    private struct Subscriber {
        let channel: String
        let handler: @Sendable ([UInt8]) -> Void
    }
    private struct State {
        var nextSubscriber = 0
        var subscribers: [Int: Subscriber] = [:]
        var pending: [Delivery] = []
        var isClosed = false
    }
    private let state = Mutex(State())

    public init(maxFrameSize: Int = 64 * 1024) {
        self.maxFrameSize = maxFrameSize
    }

    public func publish(_ frame: [UInt8], to channel: String) throws {
        try RelayChannel.validate(channel)
        guard frame.count <= maxFrameSize else {
            throw RelayError(.frameTooLarge, "frame of \(frame.count) bytes exceeds the memory relay's \(maxFrameSize)-byte maximum: chunk it")
        }
        try state.withLock { state in
            guard !state.isClosed else { throw RelayError(.closed, "memory relay is closed") }
            for id in state.subscribers.keys.sorted() where state.subscribers[id]!.channel == channel {
                state.pending.append(Delivery(channel: channel, frame: frame, subscriber: id))
            }
        }
    }

    public func subscribe(_ channel: String, handler: @escaping @Sendable ([UInt8]) -> Void) throws -> RelaySubscription {
        try RelayChannel.validate(channel)
        let id = try state.withLock { state -> Int in
            guard !state.isClosed else { throw RelayError(.closed, "memory relay is closed") }
            state.nextSubscriber += 1
            state.subscribers[state.nextSubscriber] = Subscriber(channel: channel, handler: handler)
            return state.nextSubscriber
        }
        return RelaySubscription(channel: channel) { [weak self] in
            self?.state.withLock { state in
                state.subscribers[id] = nil
                // Frames in flight to a listener that left are gone.
                state.pending.removeAll { $0.subscriber == id }
            }
        }
    }

    public func close() {
        state.withLock { state in
            state.isClosed = true
            state.subscribers = [:]
            state.pending = []
        }
    }

    // MARK: Driving the network

    /// Deliveries waiting, oldest first.
    public var pending: [Delivery] { state.withLock { $0.pending } }

    /// Delivers the pending delivery at `index` (0: oldest). False if there is none.
    @discardableResult
    public func deliver(at index: Int = 0) -> Bool {
        let next = state.withLock { state -> (Delivery, @Sendable ([UInt8]) -> Void)? in
            guard state.pending.indices.contains(index) else { return nil }
            let delivery = state.pending.remove(at: index)
            guard let subscriber = state.subscribers[delivery.subscriber] else { return nil }
            return (delivery, subscriber.handler)
        }
        guard let (delivery, handler) = next else { return false }
        handler(delivery.frame)   // outside the lock: handlers may publish
        return true
    }

    /// Delivers until nothing is pending, including frames that handlers
    /// publish meanwhile; stops after `limit` deliveries so a feedback loop
    /// cannot spin forever. Returns how many were delivered.
    @discardableResult
    public func deliverAll(limit: Int = 1_000_000) -> Int {
        var delivered = 0
        while delivered < limit, deliver(at: 0) { delivered += 1 }
        return delivered
    }

    /// Loses the pending delivery at `index`.
    public func drop(at index: Int = 0) {
        state.withLock { state in
            if state.pending.indices.contains(index) { state.pending.remove(at: index) }
        }
    }

    /// Queues a second copy of the pending delivery at `index`, at the end.
    public func duplicate(at index: Int = 0) {
        state.withLock { state in
            if state.pending.indices.contains(index) { state.pending.append(state.pending[index]) }
        }
    }

    /// Reorders what is pending, e.g. with a seeded shuffle from the simulator.
    public func reorderPending(_ reorder: (inout [Delivery]) -> Void) {
        state.withLock { reorder(&$0.pending) }
    }
}
