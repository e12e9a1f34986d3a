import Foundation
import QuireRelay

/// The simulated network: a relay with no mailbox, like `MemoryRelay`, that
/// also knows who sent each frame (each device publishes through its own
/// `endpoint`), and breaks frames on purpose: drop, duplicate, reorder,
/// delay, partition and corrupt, each decided from the simulator's seeded
/// stream and counted by kind.
///
/// It keeps `MemoryRelay`'s contract: `publish` only queues (one delivery
/// per subscriber listening now; a later subscriber gets nothing), handlers
/// run on the driver's thread inside `deliverReady`, never inside `publish`,
/// and frames in flight to a subscription that ended are gone.
///
/// It is `MemoryRelay`'s sibling rather than a wrapper: a fault needs to
/// know the sender (partitions), a due time (delays) and the sender's causal
/// stamp, none of which a `MemoryRelay.Delivery` carries.
///
/// Each frame carries an opaque `tag` from the sender (the simulator's causal
/// stamp: what the sender could have known when it sent), handed back on
/// delivery. It never enters the bytes.
public final class FaultyRelay: @unchecked Sendable {
    public typealias Tag = [Int]

    private struct Subscriber {
        let device: Int
        let channel: String
        let handler: @Sendable ([UInt8]) -> Void
    }

    private struct InFlight {
        let serial: Int
        let from: Int
        let to: Int
        let subscriber: Int
        var frame: [UInt8]
        let readyAtMs: UInt64
        let tag: Tag
    }

    public let maxFrameSize: Int
    private let lock = NSLock()
    private var subscribers: [Int: Subscriber] = [:]
    private var nextSubscriber = 0
    private var inFlight: [InFlight] = []
    private var serial = 0
    private var isClosed = false
    private let clock: SimClock
    private var random: SeededRandom

    /// Rates in force now (the simulator sets them, and zeroes them to heal).
    public var rates = FaultRates()
    /// Side of each device slot while partitioned; nil when the network is whole.
    public var partition: [Int: Int]?
    /// Slots whose process died mid-step: what they publish is never sent.
    public var silenced: Set<Int> = []
    public private(set) var injected = FaultCounts()
    /// Frames handed to a subscriber so far.
    public private(set) var delivered = 0

    /// Called on publish for the sender's tag.
    public var tagOfSender: (Int) -> Tag = { _ in [] }
    /// Called after a frame reached a subscriber (its device slot, the sender's tag).
    public var onDelivered: (_ to: Int, _ from: Int, _ tag: Tag) -> Void = { _, _, _ in }
    /// One line per injected fault, for the trace.
    public var onFault: (_ kind: FaultKind, _ from: Int, _ to: Int, _ detail: String) -> Void = { _, _, _, _ in }

    public init(clock: SimClock, random: SeededRandom, maxFrameSize: Int = 64 << 10) {
        self.clock = clock
        self.random = random
        self.maxFrameSize = maxFrameSize
    }

    /// Draws the network's next choices from `seed` (the simulator reseeds
    /// it at every step, so dropping a step leaves the others' network alone).
    public func reseed(_ seed: UInt64) {
        lock.lock(); random = SeededRandom(seed: seed); lock.unlock()
    }

    /// The relay device `slot` publishes and subscribes through.
    public func endpoint(for slot: Int) -> any Relay { Endpoint(network: self, slot: slot) }

    /// Frames still on their way (delayed ones included).
    public var framesInFlight: Int { lock.lock(); defer { lock.unlock() }; return inFlight.count }

    /// True if a frame is due by `nowMs`.
    public func hasReadyFrames() -> Bool {
        let now = clock.monotonicMilliseconds()
        lock.lock(); defer { lock.unlock() }
        return inFlight.contains { $0.readyAtMs <= now }
    }

    // MARK: Publishing (engine side)

    fileprivate func publish(_ frame: [UInt8], to channel: String, from slot: Int) throws {
        try RelayChannel.validate(channel)
        guard frame.count <= maxFrameSize else {
            throw RelayError(.frameTooLarge, "frame of \(frame.count) bytes exceeds the simulated relay's \(maxFrameSize)-byte maximum: chunk it")
        }
        let tag = tagOfSender(slot)
        let now = clock.monotonicMilliseconds()
        var faults: [(FaultKind, Int, String)] = []
        lock.lock()
        guard !isClosed else { lock.unlock(); throw RelayError(.closed, "simulated relay is closed") }
        if silenced.contains(slot) { lock.unlock(); return }
        for id in subscribers.keys.sorted() where subscribers[id]!.channel == channel {
            let to = subscribers[id]!.device
            if random.chance(rates.drop) {
                injected[.drop] += 1
                faults.append((.drop, to, "\(frame.count) B lost"))
                continue
            }
            var bytes = frame
            if random.chance(rates.corrupt) {
                injected[.corrupt] += 1
                var flipped: [Int] = []
                for _ in 0..<random.int(1...3) {
                    let at = random.int(0..<bytes.count)
                    bytes[at] ^= UInt8(truncatingIfNeeded: random.int(1...255))
                    flipped.append(at)
                }
                faults.append((.corrupt, to, "\(frame.count) B, bytes \(flipped.map(String.init).joined(separator: ",")) flipped"))
            }
            var ready = now
            if random.chance(rates.delay) {
                injected[.delay] += 1
                ready = now + UInt64(random.int(Int(rates.delayRangeMs.lowerBound)...Int(rates.delayRangeMs.upperBound)))
                faults.append((.delay, to, "\(frame.count) B held \(ready - now) ms"))
            }
            serial += 1
            inFlight.append(InFlight(serial: serial, from: slot, to: to, subscriber: id, frame: bytes, readyAtMs: ready, tag: tag))
            if random.chance(rates.duplicate) {
                injected[.duplicate] += 1
                serial += 1
                // The copy may take another route: it can come later than the original.
                let later = ready + UInt64(random.int(0...3_000))
                inFlight.append(InFlight(serial: serial, from: slot, to: to, subscriber: id, frame: bytes, readyAtMs: later, tag: tag))
                faults.append((.duplicate, to, "\(frame.count) B twice, copy +\(later - ready) ms"))
            }
        }
        lock.unlock()
        for (kind, to, detail) in faults { onFault(kind, slot, to, detail) }
    }

    fileprivate func subscribe(_ channel: String, slot: Int, handler: @escaping @Sendable ([UInt8]) -> Void) throws -> RelaySubscription {
        try RelayChannel.validate(channel)
        lock.lock()
        guard !isClosed else { lock.unlock(); throw RelayError(.closed, "simulated relay is closed") }
        nextSubscriber += 1
        let id = nextSubscriber
        subscribers[id] = Subscriber(device: slot, channel: channel, handler: handler)
        lock.unlock()
        return RelaySubscription(channel: channel) { [weak self] in
            guard let self else { return }
            self.lock.lock()
            self.subscribers[id] = nil
            // Frames in flight to a listener that left are gone.
            self.inFlight.removeAll { $0.subscriber == id }
            self.lock.unlock()
        }
    }

    public func close() {
        lock.lock()
        isClosed = true
        subscribers = [:]
        inFlight = []
        lock.unlock()
    }

    // MARK: Driving the network (simulator side)

    /// Delivers every frame due by now, oldest first except where a reorder
    /// fault picks a later one; frames across a partition are lost. Returns
    /// how many reached a subscriber.
    @discardableResult
    public func deliverReady() -> Int {
        let now = clock.monotonicMilliseconds()
        var count = 0
        while true {
            var lostToPartition: InFlight?
            var reordered: (InFlight, skipped: Int)?
            let next: (InFlight, @Sendable ([UInt8]) -> Void)? = {
                lock.lock(); defer { lock.unlock() }
                let ready = inFlight.indices.filter { inFlight[$0].readyAtMs <= now }
                guard !ready.isEmpty else { return nil }
                var index = ready[0]
                if ready.count > 1, random.chance(rates.reorder) {
                    let choice = random.int(1..<ready.count)
                    index = ready[choice]
                    injected[.reorder] += 1
                    reordered = (inFlight[index], choice)
                }
                let frame = inFlight.remove(at: index)
                if let sides = partition, (sides[frame.from] ?? 0) != (sides[frame.to] ?? 0) {
                    injected[.partition] += 1
                    lostToPartition = frame
                    return (frame, { _ in })
                }
                guard let subscriber = subscribers[frame.subscriber] else { return (frame, { _ in }) }
                return (frame, subscriber.handler)
            }()
            guard let (frame, handler) = next else { break }
            if let (r, skipped) = reordered {
                onFault(.reorder, r.from, r.to, "\(r.frame.count) B overtook \(skipped) frame(s)")
            }
            if let lost = lostToPartition {
                onFault(.partition, lost.from, lost.to, "\(lost.frame.count) B lost across the partition")
                continue
            }
            handler(frame.frame)   // outside the lock: a handler may publish
            delivered += 1
            count += 1
            onDelivered(frame.to, frame.from, frame.tag)
        }
        return count
    }

    /// The earliest time a held frame becomes due, if any is held.
    public func nextDueMs() -> UInt64? {
        lock.lock(); defer { lock.unlock() }
        return inFlight.map(\.readyAtMs).min()
    }
}

/// One device's view of the network: what it publishes is stamped with its slot.
private final class Endpoint: Relay, @unchecked Sendable {
    let network: FaultyRelay
    let slot: Int

    init(network: FaultyRelay, slot: Int) {
        self.network = network
        self.slot = slot
    }

    var maxFrameSize: Int { network.maxFrameSize }

    func publish(_ frame: [UInt8], to channel: String) throws {
        try network.publish(frame, to: channel, from: slot)
    }

    func subscribe(_ channel: String, handler: @escaping @Sendable ([UInt8]) -> Void) throws -> RelaySubscription {
        try network.subscribe(channel, slot: slot, handler: handler)
    }

    /// Closing one device's view closes nothing else: the network outlives it.
    func close() {}
}
