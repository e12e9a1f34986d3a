import CZlib

/// A note body as the `rows.body` column keeps it: deflated (zlib) when
/// that saves at least a tenth, else as written. Storage only: hashes,
/// leaves and the wire always see the bytes as written. The only code that
/// speaks zlib; no raw pointer leaves this file.
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
        guard body.count >= 128, body.count <= maxLength else { return (body, raw) }
        // Images, PDFs and archives are compressed already: a quick deflate
        // of a sample says so before the whole body is worked on.
        if body.count > 4 * sampleSize, !shrinks(Array(body.prefix(sampleSize)), level: 1) { return (body, raw) }
        var bound = compressBound(uLong(body.count))
        var out = [UInt8](repeating: 0, count: headerSize + Int(bound))
        let status = out.withUnsafeMutableBufferPointer { dst in
            body.withUnsafeBufferPointer { src in
                compress2(dst.baseAddress! + headerSize, &bound, src.baseAddress, uLong(src.count), level)
            }
        }
        guard status == Z_OK, headerSize + Int(bound) <= body.count - body.count / 10 else { return (body, raw) }
        out.removeLast(out.count - headerSize - Int(bound))
        let n = UInt32(body.count)
        for i in 0..<headerSize { out[i] = UInt8(truncatingIfNeeded: n >> (8 * UInt32(i))) }
        return (out, deflated)
    }

    static let sampleSize = 4096
    /// zlib's fastest level: every save and every row a catch-up brings
    /// is deflated on the way in, and notes of prose already shrink to
    /// under half at this level (level 6 saves a few percent more at
    /// several times the cost).
    static let level: Int32 = 1

    /// Whether deflating `sample` saves at least a tenth.
    private static func shrinks(_ sample: [UInt8], level: Int32) -> Bool {
        var bound = compressBound(uLong(sample.count))
        var out = [UInt8](repeating: 0, count: Int(bound))
        let status = out.withUnsafeMutableBufferPointer { dst in
            sample.withUnsafeBufferPointer { src in compress2(dst.baseAddress!, &bound, src.baseAddress, uLong(src.count), level) }
        }
        return status == Z_OK && Int(bound) <= sample.count - sample.count / 10
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
        var out = [UInt8](repeating: 0, count: length)
        var produced = uLongf(length)
        let status = out.withUnsafeMutableBufferPointer { dst in
            stored.withUnsafeBufferPointer { src in
                uncompress(dst.baseAddress, &produced, src.baseAddress! + headerSize, uLong(src.count - headerSize))
            }
        }
        guard status == Z_OK, Int(produced) == length else { return nil }
        return out
    }
}
