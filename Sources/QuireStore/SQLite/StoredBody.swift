import CDeflate
import QuireCore
import Synchronization

/// A note body as the `rows.body` column keeps it: deflated (a zlib
/// stream, made with libdeflate) when that saves at least a tenth, else as
/// written. Storage only: hashes, leaves and the wire always see the bytes
/// as written. The only code that speaks deflate; no raw pointer leaves
/// this file.
enum StoredBody {
    /// `bodyFormat` values.
    static let raw: Int64 = 0
    static let deflated: Int64 = 1
    /// A deflated body starts with its length, 4 bytes little-endian.
    static let headerSize = 4
    /// No body is larger (a row's size limit is far below): a corrupt
    /// header must not make us allocate gigabytes.
    static let maxLength = 256 << 20

    static func encode(_ body: [UInt8]) -> (bytes: [UInt8], format: Int64) {
        guard body.count >= 128, body.count <= maxLength, let compressor = compressors.take() else { return (body, raw) }
        defer { compressors.give(compressor) }
        // Images, PDFs and archives are compressed already: a quick deflate
        // of a sample says so before the whole body is worked on.
        if body.count > 4 * sampleSize, deflate(Array(body.prefix(sampleSize)), with: compressor) == nil { return (body, raw) }
        guard let stream = deflate(body, with: compressor) else { return (body, raw) }
        var out = [UInt8](repeating: 0, count: headerSize)
        let n = UInt32(body.count)
        for i in 0..<headerSize { out[i] = UInt8(truncatingIfNeeded: n >> (8 * UInt32(i))) }
        out += stream
        return (out, deflated)
    }

    /// Allocating a compressor costs about as much as deflating a short
    /// note, so they are kept for the next body (each used by one thread
    /// at a time). As many as deflate at once on most machines are kept.
    private static let compressors = Pool(keep: 8, make: { libdeflate_alloc_compressor(level) }, free: libdeflate_free_compressor)
    private static let decompressors = Pool(keep: 8, make: { libdeflate_alloc_decompressor() }, free: libdeflate_free_decompressor)

    /// Idle libdeflate states, as address bits so the lock can hold them.
    private final class Pool: Sendable {
        private let idle = Mutex<[UInt]>([])
        private let keep: Int
        private let make: @Sendable () -> OpaquePointer?
        private let free: @Sendable (OpaquePointer) -> Void

        init(keep: Int, make: @escaping @Sendable () -> OpaquePointer?, free: @escaping @Sendable (OpaquePointer) -> Void) {
            self.keep = keep
            self.make = make
            self.free = free
        }

        func take() -> OpaquePointer? {
            if let bits = idle.withLock({ $0.popLast() }) { return OpaquePointer(bitPattern: bits) }
            return make()
        }

        func give(_ state: OpaquePointer) {
            let bits = UInt(bitPattern: Int(bitPattern: state))
            let kept = idle.withLock { idle in
                guard idle.count < keep else { return false }
                idle.append(bits)
                return true
            }
            if !kept { free(state) }
        }
    }

    static let sampleSize = 4096
    /// The fastest level: every save and every row a catch-up brings is
    /// deflated on the way in, and notes of prose already shrink to under
    /// half at this level (higher levels save a few percent more at two or
    /// three times the cost).
    static let level: Int32 = 1

    /// `bytes` as a zlib stream, with its length header room counted, if
    /// that saves at least a tenth (nil: keep them as written).
    private static func deflate(_ bytes: [UInt8], with compressor: OpaquePointer) -> [UInt8]? {
        let room = bytes.count - bytes.count / 10 - headerSize
        guard room > 0 else { return nil }
        var out = [UInt8](repeating: 0, count: room)
        // libdeflate answers 0 when the stream does not fit in `room`.
        let written = out.withUnsafeMutableBytes { dst in
            bytes.withUnsafeBytes { src in
                libdeflate_zlib_compress(compressor, src.baseAddress, src.count, dst.baseAddress, dst.count)
            }
        }
        guard written > 0 else { return nil }
        out.removeLast(out.count - written)
        return out
    }

    /// The body as written, or nil when the stored bytes do not inflate to
    /// the length they claim (damaged on disk: the caller treats the body
    /// as one that failed its hash).
    static func decode(_ stored: [UInt8], format: Int64) -> [UInt8]? {
        guard format == deflated else { return stored }
        guard stored.count > headerSize else { return nil }
        var length = 0
        for i in 0..<headerSize { length |= Int(stored[i]) << (8 * i) }
        guard length > 0, length <= maxLength else { return nil }
        guard let decompressor = decompressors.take() else { return nil }
        defer { decompressors.give(decompressor) }
        var out = [UInt8](repeating: 0, count: length)
        var produced = 0
        // A stream that would inflate past `length` fails (no room), one
        // that stops short is caught by the count.
        let status = out.withUnsafeMutableBytes { dst in
            stored.withUnsafeBytes { src in
                libdeflate_zlib_decompress(decompressor, src.baseAddress! + headerSize, src.count - headerSize,
                                           dst.baseAddress, dst.count, &produced)
            }
        }
        guard status == LIBDEFLATE_SUCCESS, produced == length else { return nil }
        return out
    }
}
