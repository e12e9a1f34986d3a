/// How large a row may be: one limit, checked everywhere content enters
/// (the mount, `quire put`) and everywhere a row crosses to a sibling (the
/// reconcile responder will not send a row over it, a receiver refuses one).
///
/// Where the numbers come from. A row travels to a sibling whole, in one
/// message: every head (concurrent version, each with its own body) and the
/// causal context. A receiver reassembles at most `maxMessageBytes` of one
/// message (the bound on its memory, and what an offloaded body needs), so
/// the most a row may take on the wire is `maxRowWireBytes` = 64 MiB, the
/// rest being room for the response around it.
///
/// The rule for heads. A row with several heads carries all their bodies,
/// so a per-version limit equal to the wire's capacity would let two
/// concurrent edits of one large note make a row that can never travel.
/// One version's body is therefore at most a quarter of the wire
/// (`maxBodyBytes` = 16 MiB): up to three concurrent versions at the full
/// limit, or four that are a little smaller, always travel together, which
/// is more than one person's devices make of one note in practice. A row
/// that still ends up larger than the wire carries (five or more large
/// concurrent versions, or a row written before this limit existed) is
/// never sent; the device holding it names it, with the reason, in
/// `quire status` and `.quire/status`, and every other row keeps syncing.
/// Editing it on that device joins its versions into one and lets it go.
///
/// So a row can travel exactly when every head's body is at most
/// `maxBodyBytes` and the whole row is at most `maxRowWireBytes`
/// (`check(_:)`); a sender and a receiver apply the same test.
public enum RowLimits {
    /// The largest message a receiver reassembles: a row at the wire limit
    /// (or a 64 MiB offloaded body) plus the framing around it.
    public static let maxMessageBytes = (64 << 20) + (64 << 10)

    /// The most one row (all its heads and its context) takes on the wire.
    public static let maxRowWireBytes = 64 << 20

    /// The largest body of one version of a row: what a file in the mount
    /// or the input of `quire put` may hold. See the rule above.
    public static let maxBodyBytes = 16 << 20

    /// The size of one version's body, as limited by `maxBodyBytes`: a
    /// note's body (nothing for a pointer to an offloaded body, which
    /// travels without it), a journal day's text, and for the other kinds
    /// every text they carry (their file holds at least that many bytes).
    public static func bodyBytes(of content: RowContent) -> Int {
        switch content {
        case .note(let n): return n.body?.count ?? 0
        case .saga(let s): return s.text.count
        case .plan(let p): return p.title.utf8.count + p.calendar.storedBytes
        case .contact(let c): return c.title.utf8.count + c.card.storedBytes
        case .setting(let s): return s.value.utf8.count
        case .memory(let m): return m.kind.utf8.count + m.text.utf8.count
        case .device(let d): return d.name.utf8.count + d.certificate.count + (d.revocation?.count ?? 0)
        }
    }

    /// An upper bound of the row's encoding on the wire (`RowWire`): every
    /// head's fields and body, its dot, and the context. Cheap: nothing is
    /// encoded, lengths are added with a generous allowance for headers.
    public static func wireBytes(of row: Row) -> Int {
        var total = 32 + row.context.entries.values.reduce(0) { $0 + 48 + 9 * $1.tags.count }
        for head in row.heads { total += headBytes(head.content) }
        return total
    }

    /// One head: its dot and map (128 bytes is more than every fixed field
    /// and header together), then each variable item with 9 bytes of header.
    static func headBytes(_ content: RowContent) -> Int {
        func text(_ s: String) -> Int { 9 + s.utf8.count }
        func texts(_ list: [String]) -> Int { 9 + list.reduce(0) { $0 + text($1) } }
        func hashes(_ list: [[UInt8]]) -> Int { 9 + list.reduce(0) { $0 + 9 + $1.count } }
        func card(_ c: CardText) -> Int { 18 + c.units.reduce(0) { $0 + 9 + 9 + 16 + 9 + 16 + 9 + $1.bytes.count } + c.removed.count * 25 }
        let fixed = 128
        switch content {
        case .note(let n):
            return fixed + text(n.title) + texts(n.tags) + 9 + (n.body?.count ?? 0) + 9 + n.contentHash.count
                + hashes(n.deletedParagraphs)
        case .saga(let s):
            return fixed + text(s.date) + 9 + s.text.count + hashes(s.deletedParagraphs)
        case .plan(let p): return fixed + text(p.title) + card(p.calendar)
        case .contact(let c): return fixed + text(c.title) + card(c.card)
        case .setting(let s): return fixed + text(s.name) + text(s.value)
        case .memory(let m): return fixed + text(m.kind) + text(m.text) + 9 + m.buries.count * 17
        case .device(let d): return fixed + text(d.name) + 9 + d.certificate.count + 9 + (d.revocation?.count ?? 0)
        }
    }

    /// Why a row cannot travel.
    public enum Violation: Equatable, Sendable, CustomStringConvertible {
        /// One version's body is over `maxBodyBytes`.
        case bodyTooLarge(bytes: Int)
        /// Every version is within the limit, but together (with the
        /// context) they are more than one message carries.
        case rowTooLarge(bytes: Int, heads: Int)

        public var description: String {
            switch self {
            case .bodyTooLarge(let bytes):
                return "a version of \(RowLimits.describe(bytes)), over the \(RowLimits.describe(RowLimits.maxBodyBytes)) limit for one version"
            case .rowTooLarge(let bytes, let heads):
                return "\(heads) concurrent versions of \(RowLimits.describe(bytes)) together, more than the "
                    + "\(RowLimits.describe(RowLimits.maxRowWireBytes)) one message carries (edit it here to join them)"
            }
        }
    }

    /// Nil when the row may travel; otherwise why not (the largest body first).
    public static func check(_ row: Row) -> Violation? {
        if let largest = row.heads.map({ bodyBytes(of: $0.content) }).max(), largest > maxBodyBytes {
            return .bodyTooLarge(bytes: largest)
        }
        let wire = wireBytes(of: row)
        return wire > maxRowWireBytes ? .rowTooLarge(bytes: wire, heads: row.heads.count) : nil
    }

    /// "16 MiB", "16.1 MiB", "900 KiB", "512 bytes": a size for a sentence,
    /// rounded up, so a size over a limit never reads as the limit itself.
    public static func describe(_ bytes: Int) -> String {
        func rounded(_ unit: Int, _ name: String) -> String {
            if bytes % unit == 0 { return "\(bytes / unit) \(name)" }
            return "\((Double(bytes) / Double(unit) * 10).rounded(.up) / 10) \(name)"
        }
        if bytes >= 1 << 20 { return rounded(1 << 20, "MiB") }
        if bytes >= 1 << 10 { return rounded(1 << 10, "KiB") }
        return "\(bytes) bytes"
    }
}
