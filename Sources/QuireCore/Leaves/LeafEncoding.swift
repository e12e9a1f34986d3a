import QuireCrypto

/// The leaf of a live row: SHA-256 under `quire.state.<namespace>` over the
/// canonical CBOR array [key, context, [[dot, head digest], ...]], heads in
/// canonical order. A head digest is SHA-256 under `quire.head.<namespace>`
/// over a fixed-order CBOR array of the head's fields.
///
/// The governing rule: a field may be hashed only if the merge converges
/// it. Hash a field the merge does not reconcile and two devices that
/// legitimately disagree about it diverge on the leaf, reconcile, change
/// nothing, and diverge again: a storm. The join converges heads and
/// context exactly (RowMerge), so both are hashed: a device that holds the
/// same heads under a smaller context still pulls the larger one.
/// What a file shows (RowView) is derived from the heads and never hashed.
/// Tombstones have no leaf: the digest commits to live content only, which
/// is what lets the barrier reason "equal digests ⇒ nobody holds k live".
public enum LeafEncoding {
    /// Bumped whenever any leaf encoding or the namespace list changes.
    /// 2: rows as heads with dots under a causal context.
    /// 3: contacts and plans as whole vCard and iCalendar files.
    /// 4: the notebook as a folder tree (kind, folder, modifiedAt, placedAt).
    public static let version: UInt8 = 4

    public static func leaf(of row: Row) -> [UInt8]? { leaf(of: row, knownDigest: nil) }

    /// The same, where the digest of the head written by `knownDigest.dot`
    /// is known already (the writer just tagged it with it).
    public static func leaf(of row: Row, knownDigest: (dot: Dot, digest: [UInt8])?) -> [UInt8]? {
        guard !row.isTombstone else { return nil }
        var w = CBORWriter(capacity: 64 + 32 * row.context.counters.count + 72 * row.heads.count)
        w.writeArrayHeader(3)
        w.writeBytes(row.key.bytes)
        row.context.write(to: &w)
        w.writeArrayHeader(row.heads.count)
        for h in row.heads {
            w.writeArrayHeader(2)
            h.dot.write(to: &w)
            if let knownDigest, knownDigest.dot == h.dot { w.writeBytes(knownDigest.digest) } else { w.writeBytes(headDigest(h)) }
        }
        return SHA256.hash(separator: row.namespace.leafSeparator, w.bytes)
    }

    public static func headDigest(_ head: RowHead) -> [UInt8] { contentDigest(head.content) }

    /// The digest of one version's converged fields (residency-independent).
    public static func contentDigest(_ content: RowContent) -> [UInt8] {
        var w = CBORWriter(capacity: 160)
        switch content {
        case .note(let n):
            // Excluded: the body bytes themselves (contentHash, their digest,
            //   stands in, so an offloaded pointer and a resident body hash the
            //   same; a resident Note keeps contentHash == digest(body));
            //   residency (bodyOffloaded, holders) and local row ids, which
            //   are per-device facts; the device-local shadow and outbox.
            // A note at the top with no set time hashes as it did before the
            // folder tree (7 fields), so an upgrade recomputes no leaf.
            w.writeArrayHeader(n.hasTreeFields ? 11 : 7)
            w.writeText(n.title)
            writeTexts(&w, n.tags)
            w.writeBytes(n.contentHash)
            w.writeInt(n.createdAt.seconds)
            w.writeInt(n.updatedAt.seconds)
            writeHashes(&w, n.deletedParagraphs)
            writeEditor(&w, n.editedBy)
            if n.hasTreeFields {
                w.writeUInt(UInt64(n.kind.rawValue))
                w.writeOptional(n.folder) { $0.writeBytes($1.bytes) }
                w.writeOptional(n.modifiedAt) { $0.writeInt($1) }
                w.writeOptional(n.placedAt) { $0.writeInt($1.seconds) }
            }
        case .saga(let s):
            // Excluded: the device-local shadow of the day's text.
            w.writeArrayHeader(5)
            w.writeText(s.date)
            w.writeBytes(s.text)
            w.writeInt(s.updatedAt.seconds)
            writeHashes(&w, s.deletedParagraphs)
            writeEditor(&w, s.editedBy)
        case .plan(let p):
            // Excluded: local row ids. The file's bytes are hashed as the
            //   card's lines with their identities and removals, all of
            //   which the merge converges (every head keeps its own text).
            w.writeArrayHeader(6)
            w.writeText(p.title)
            p.calendar.writeLeaf(to: &w)
            w.writeInt(p.createdAt.seconds)
            w.writeInt(p.updatedAt.seconds)
            writeEditor(&w, p.editedBy)
        case .contact(let c):
            // Excluded: any link to a system address book entry (per device).
            //   The card as lines with identities, as for plans.
            w.writeArrayHeader(5)
            w.writeText(c.title)
            c.card.writeLeaf(to: &w)
            w.writeInt(c.updatedAt.seconds)
            writeEditor(&w, c.editedBy)
        case .setting(let s):
            // Per-device flags (backup opt-in, role) live in prefs, never here.
            w.writeArrayHeader(4)
            w.writeText(s.name)
            w.writeText(s.value)
            w.writeInt(s.updatedAt.seconds)
            writeEditor(&w, s.editedBy)
        case .memory(let e):
            // Excluded: when this device first saw the event (per device).
            w.writeArrayHeader(4)
            w.writeInt(e.at.seconds)
            w.writeText(e.kind)
            w.writeText(e.text)
            w.writeArrayHeader(e.buries.count)
            for k in e.buries { w.writeBytes(k.bytes) }
        case .device(let d):
            // Excluded: last-seen times (each device observes its own).
            w.writeArrayHeader(3)
            w.writeText(d.name)
            w.writeBytes(d.certificate)
            w.writeOptional(d.revocation) { $0.writeBytes($1) }
        }
        return SHA256.hash(separator: content.namespace.headSeparator, w.bytes)
    }

    private static func writeTexts(_ w: inout CBORWriter, _ texts: [String]) {
        w.writeArrayHeader(texts.count)
        for t in texts { w.writeText(t) }
    }

    private static func writeHashes(_ w: inout CBORWriter, _ hashes: [[UInt8]]) {
        w.writeArrayHeader(hashes.count)
        for h in hashes { w.writeBytes(h) }
    }

    private static func writeEditor(_ w: inout CBORWriter, _ editor: DeviceID?) {
        w.writeOptional(editor) { $0.writeBytes($1.bytes) }
    }
}
