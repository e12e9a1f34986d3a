import QuireCore
import QuireCrypto

/// Envelope format 2: what the relay sees is only
///
///     magic "QS" | format 2 | box
///
/// with no device id in the clear (the format-1 header named the sender and
/// the recipient, so whoever reads the relay could map an account's devices
/// and who talks to whom), no box kind (an introduction looks like any other
/// frame), and a size from a few buckets (a digest, a pull request, a row
/// and a chunk of a large body look alike up to their bucket). The box's
/// plaintext is `inner length (4, BE) | inner frame | zero padding`.
///
/// The receiver finds the sender by trying the box keys of its trusted
/// devices (an authenticated box opens with exactly one), then the
/// anonymous open (an introduction), then the keys of revoked devices (only
/// to count the frame as theirs): a handful of X25519 operations per frame
/// for a person's few devices, which is the price of not naming them.
///
/// Compatibility: format 1 is still read, so an older device's frames are
/// understood; every frame sent is format 2, which an older device cannot
/// read. The fleet syncs again once every device runs this version
/// (SECURITY.md, "Mixed versions").
public enum OpaqueEnvelope {
    public static let formatVersion: UInt8 = 2
    public static let headerSize = 3
    /// Frame sizes on the wire (capped by the relay's frame limit).
    public static let buckets = [1 << 10, 4 << 10, 16 << 10, 64 << 10]
    static let lengthSize = 4

    /// The most plaintext one frame of `maxFrameSize` carries.
    public static func room(maxFrameSize: Int) -> Int {
        maxFrameSize - headerSize - max(Box.overhead, Box.anonymousOverhead) - lengthSize
    }

    /// The wire size for a box of `boxBytes`: the smallest bucket that holds
    /// it, or the relay's limit.
    static func frameSize(forBox boxBytes: Int, maxFrameSize: Int) -> Int {
        let needed = headerSize + boxBytes
        return min(buckets.first { $0 >= needed } ?? maxFrameSize, maxFrameSize)
    }

    /// Pads `inner` so the sealed frame fills its bucket, seals it with
    /// `seal` (which adds `boxOverhead`), and frames it.
    static func make(inner: [UInt8], boxOverhead: Int, maxFrameSize: Int, seal: ([UInt8]) -> [UInt8]) -> [UInt8] {
        let size = frameSize(forBox: lengthSize + inner.count + boxOverhead, maxFrameSize: maxFrameSize)
        var plain = [UInt8](repeating: 0, count: max(size - headerSize - boxOverhead, lengthSize + inner.count))
        let n = UInt32(inner.count)
        plain[0] = UInt8(n >> 24); plain[1] = UInt8((n >> 16) & 0xFF); plain[2] = UInt8((n >> 8) & 0xFF); plain[3] = UInt8(n & 0xFF)
        plain.replaceSubrange(lengthSize..<(lengthSize + inner.count), with: inner)
        return Envelope.magic + [formatVersion] + seal(plain)
    }

    /// The inner frame inside opened, padded plaintext (nil if it lies about its length).
    static func unpad(_ plain: [UInt8]) -> [UInt8]? {
        guard plain.count >= lengthSize else { return nil }
        let n = Int(plain[0]) << 24 | Int(plain[1]) << 16 | Int(plain[2]) << 8 | Int(plain[3])
        guard n <= plain.count - lengthSize else { return nil }
        return Array(plain[lengthSize..<(lengthSize + n)])
    }

    /// True when `bytes` start like a format-2 envelope.
    static func isOpaque(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 3 && bytes[0] == Envelope.magic[0] && bytes[1] == Envelope.magic[1] && bytes[2] == formatVersion
    }

    /// Opens a format-2 frame: which device sealed it (by whose key it
    /// opens), how, and the inner bytes. Checks stop at the first failure.
    static func open(_ bytes: [UInt8], me: FrameIdentity, roster: Roster) -> Result<(sender: DeviceID?, kind: Envelope.BoxKind, inner: [UInt8]), FrameDrop> {
        guard bytes.count > headerSize + Box.overhead + lengthSize else { return .failure(.truncated) }
        let box = bytes[headerSize...]
        let members = roster.members.values.filter { $0.deviceID != me.deviceID }.sorted { $0.deviceID < $1.deviceID }
        for member in members where !member.isRevoked {
            if let plain = try? Box.open(box, from: member.boxKey, to: me.box) {
                guard let inner = unpad(plain) else { return .failure(.badPayload) }
                return .success((member.deviceID, .authenticated, inner))
            }
        }
        if let plain = try? Box.openAnonymous(box, to: me.box) {
            guard let inner = unpad(plain) else { return .failure(.badPayload) }
            return .success((nil, .anonymous, inner))
        }
        for member in members where member.isRevoked {
            if (try? Box.open(box, from: member.boxKey, to: me.box)) != nil { return .failure(.revoked) }
        }
        return .failure(.unknownSender)
    }

    /// The revoked device whose key opens this frame's box (nil: none, or
    /// not a format-2 frame). Asked only after `open` refused the frame as
    /// a revoked device's, to answer it (`revoked_notice`): an
    /// authenticated box opens only with its sender's key, so the answer
    /// goes to the device that sent it, not to one a frame names.
    static func revokedSender(_ bytes: [UInt8], me: FrameIdentity, roster: Roster) -> DeviceID? {
        guard isOpaque(bytes), bytes.count > headerSize + Box.overhead + lengthSize else { return nil }
        let box = bytes[headerSize...]
        return roster.members.values.filter { $0.deviceID != me.deviceID && $0.isRevoked }.sorted { $0.deviceID < $1.deviceID }
            .first { (try? Box.open(box, from: $0.boxKey, to: me.box)) != nil }?.deviceID
    }
}
