import QuireCore
import QuireCrypto

/// The history of one run, line by line: operations, network faults and
/// every frame in and out of every engine. Its hash is what "same seed, same
/// history, byte for byte" compares; its lines are what a failing seed prints.
///
/// Frames are traced by sub-kind and payload size as the engines see them,
/// never by their sealed bytes: sealing draws a fresh nonce from the system
/// (libsodium), so ciphertexts differ from run to run while everything the
/// fleet does with them does not.
public final class SimulationTrace: @unchecked Sendable {
    /// Where in a run a line was written.
    public enum Phase: Sendable, Equatable, CustomStringConvertible {
        /// Devices being made and paired.
        case setup
        /// Step `n` of the history (its operation, then the fleet running).
        case step(Int)
        /// Faults healed, the fleet settling before the checks.
        case settle

        public var description: String {
            switch self {
            case .setup: "setup"
            case .step(let n): "#\(n)"
            case .settle: "settle"
            }
        }
    }

    public struct Line: Sendable, CustomStringConvertible {
        /// Simulated milliseconds since the fleet started.
        public let atMs: UInt64
        public let phase: Phase
        /// Which device it concerns, if one.
        public let device: String?
        public let text: String

        public var description: String {
            let seconds = atMs / 1000, millis = atMs % 1000
            let time = "\(seconds).\(String(millis + 1000).dropFirst())s"
            return "\(time) \(phase) \(device ?? "-"): \(text)"
        }
    }

    /// Keep at most this many lines in memory (the hash covers them all).
    public let lineLimit: Int
    public private(set) var lines: [Line] = []
    public private(set) var lineCount = 0
    private var hasher = SHA256()
    private let startMs: UInt64
    private let clock: SimClock
    public var phase = Phase.setup

    public init(clock: SimClock, lineLimit: Int = 200_000) {
        self.clock = clock
        self.startMs = clock.monotonicMilliseconds()
        self.lineLimit = lineLimit
        hasher.updateSeparator("quire.simulation.trace")
    }

    public func record(_ device: String?, _ text: String) {
        let line = Line(atMs: clock.monotonicMilliseconds() - startMs, phase: phase, device: device, text: text)
        let rendered = line.description
        hasher.update(Array(rendered.utf8) + [0x0A])
        lineCount += 1
        if lines.count < lineLimit { lines.append(line) }
    }

    /// The hash of every line so far (hex). Reading it does not end the trace.
    public var hashHex: String {
        var copy = hasher
        return Hex.encode(copy.finalize())
    }

    /// The trace as text; frames and faults can be left out (operations,
    /// engine events and the settling remain).
    public func render(framesIncluded: Bool = true, faultsIncluded: Bool = true) -> String {
        var out = ""
        for line in lines where (framesIncluded || !line.text.hasPrefix("frame ")) && (faultsIncluded || !line.text.hasPrefix("fault ")) {
            out += line.description + "\n"
        }
        if lineCount > lines.count { out += "… \(lineCount - lines.count) more lines not kept\n" }
        return out
    }
}
