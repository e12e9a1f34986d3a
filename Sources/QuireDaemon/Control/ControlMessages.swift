import Foundation
import QuireCore
import QuireSync

/// What a command asks of the process that runs this device's engine
/// (`quire offload`, `recall`, `fsck`), one per connection.
public enum ControlRequest: Equatable, Sendable {
    case offload(keys: [RowKey], copies: Int, timeout: Double)
    case recall(keys: [RowKey], timeout: Double)
    /// Which of these bodies each holder still holds (re-hashed there).
    case verify(items: [DeviceID: [HoldQuery.Item]], timeout: Double)
}

/// What comes back: any number of outcomes (or one `verified`), an
/// `error` if the request could not run, then `done`.
public enum ControlEvent: Equatable, Sendable {
    case outcome(OffloadOutcome)
    /// Per holder, the hashes it confirmed; nil: it did not answer in time.
    case verified([DeviceID: Set<[UInt8]>?])
    case error(String)
    case done
}

// JSON on the wire: ids and hashes as hex, one object per line.

extension ControlRequest: Codable {
    private enum Keys: String, CodingKey { case op, keys, copies, timeout, items }
    private struct WireItem: Codable { var hash: String; var key: String? }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        let timeout = try c.decode(Double.self, forKey: .timeout)
        switch try c.decode(String.self, forKey: .op) {
        case "offload":
            self = .offload(keys: try Self.keys(c), copies: try c.decode(Int.self, forKey: .copies), timeout: timeout)
        case "recall":
            self = .recall(keys: try Self.keys(c), timeout: timeout)
        case "verify":
            var items: [DeviceID: [HoldQuery.Item]] = [:]
            for (holder, list) in try c.decode([String: [WireItem]].self, forKey: .items) {
                guard let id = DeviceID(hex: holder) else { throw DaemonError("bad device id \(holder)") }
                items[id] = try list.map { item in
                    guard let hash = Hex.decode(item.hash), hash.count == 32 else { throw DaemonError("bad content hash \(item.hash)") }
                    return HoldQuery.Item(contentHash: hash, key: item.key.flatMap { RowKey(hex: $0) })
                }
            }
            self = .verify(items: items, timeout: timeout)
        case let other:
            throw DaemonError("unknown request '\(other)'")
        }
    }

    private static func keys(_ c: KeyedDecodingContainer<Keys>) throws -> [RowKey] {
        try c.decode([String].self, forKey: .keys).map { hex in
            guard let key = RowKey(hex: hex) else { throw DaemonError("bad row key \(hex)") }
            return key
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        switch self {
        case .offload(let keys, let copies, let timeout):
            try c.encode("offload", forKey: .op)
            try c.encode(keys.map(\.hex), forKey: .keys)
            try c.encode(copies, forKey: .copies)
            try c.encode(timeout, forKey: .timeout)
        case .recall(let keys, let timeout):
            try c.encode("recall", forKey: .op)
            try c.encode(keys.map(\.hex), forKey: .keys)
            try c.encode(timeout, forKey: .timeout)
        case .verify(let items, let timeout):
            try c.encode("verify", forKey: .op)
            var wire: [String: [WireItem]] = [:]
            for (id, list) in items { wire[id.hex] = list.map { WireItem(hash: Hex.encode($0.contentHash), key: $0.key?.hex) } }
            try c.encode(wire, forKey: .items)
            try c.encode(timeout, forKey: .timeout)
        }
    }
}

extension ControlEvent: Codable {
    private enum Keys: String, CodingKey { case event, outcome, holders, silent, message }
    private struct WireOutcome: Codable {
        var key: String, title: String, bytes: Int, result: String, reason: String?, holders: [String]
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        switch try c.decode(String.self, forKey: .event) {
        case "outcome":
            let o = try c.decode(WireOutcome.self, forKey: .outcome)
            guard let key = RowKey(hex: o.key), let result = OffloadOutcome.Result(rawValue: o.result) else {
                throw DaemonError("bad outcome for \(o.key)")
            }
            self = .outcome(OffloadOutcome(key: key, title: o.title, bytes: o.bytes, result: result, reason: o.reason,
                                           holders: o.holders.compactMap { DeviceID(hex: $0) }))
        case "verified":
            var holders: [DeviceID: Set<[UInt8]>?] = [:]
            for (hex, held) in try c.decode([String: [String]].self, forKey: .holders) {
                guard let id = DeviceID(hex: hex) else { throw DaemonError("bad device id \(hex)") }
                holders[id] = Set(held.compactMap { Hex.decode($0) })
            }
            for hex in try c.decodeIfPresent([String].self, forKey: .silent) ?? [] {
                guard let id = DeviceID(hex: hex) else { throw DaemonError("bad device id \(hex)") }
                holders[id] = .some(nil)
            }
            self = .verified(holders)
        case "error":
            self = .error(try c.decode(String.self, forKey: .message))
        case "done":
            self = .done
        case let other:
            throw DaemonError("unknown event '\(other)'")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        switch self {
        case .outcome(let o):
            try c.encode("outcome", forKey: .event)
            try c.encode(WireOutcome(key: o.key.hex, title: o.title, bytes: o.bytes, result: o.result.rawValue, reason: o.reason,
                                     holders: o.holders.map(\.hex)), forKey: .outcome)
        case .verified(let holders):
            try c.encode("verified", forKey: .event)
            // Holders that did not answer are listed apart (JSON has no
            // room for a nil inside a dictionary Codable writes).
            var wire: [String: [String]] = [:]
            var silent: [String] = []
            for (id, held) in holders {
                if let held { wire[id.hex] = held.map { Hex.encode($0) }.sorted() } else { silent.append(id.hex) }
            }
            try c.encode(wire, forKey: .holders)
            try c.encode(silent.sorted(), forKey: .silent)
        case .error(let message):
            try c.encode("error", forKey: .event)
            try c.encode(message, forKey: .message)
        case .done:
            try c.encode("done", forKey: .event)
        }
    }
}

/// A failure of the daemon's plumbing, in words.
public struct DaemonError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
