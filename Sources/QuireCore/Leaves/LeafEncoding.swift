import QuireCrypto

/// The leaf of a live row: SHA-256 under `quire.state.<namespace>` over a
/// fixed-order canonical CBOR array. The governing rule: a field may be
/// hashed only if the merge converges it. Hash a field the merge does not
/// reconcile and two devices that legitimately disagree about it diverge on
/// the leaf, reconcile, change nothing, and diverge again: a storm.
///
/// Every leaf starts with the row key and the version vector (the merge
/// converges vectors by join, and hashing them means a device that holds the
/// same content under an older vector still pulls the newer one).
/// Tombstones have no leaf: the digest commits to live content only, which
/// is what lets the barrier reason "equal digests ⇒ nobody holds k live".
public enum LeafEncoding {
    /// Bumped whenever any leaf encoding or the namespace list changes.
    public static let version: UInt8 = 1

    public static func leaf(of row: Row) -> [UInt8]? {
        guard let content = row.content else { return nil }
        return leaf(key: row.key, vector: row.version.vector, content: content)
    }

    public static func leaf(key: RowKey, vector: VersionVector, content: RowContent) -> [UInt8] {
        var w = CBORWriter(capacity: 160)
        switch content {
        case .note(let n):
            // Excluded: the body bytes themselves (their digest stands in, so
            //   an offloaded pointer and a resident body hash the same);
            //   residency (bodyOffloaded, holders) and local row ids, which
            //   are per-device facts; the device-local shadow and outbox.
            w.writeArrayHeader(9)
            header(&w, key, vector)
            w.writeText(n.title)
            writeTexts(&w, n.tags)
            w.writeBytes(noteBodyLeafDigest(body: n.body, contentHash: n.contentHash))
            w.writeInt(n.createdAt.seconds)
            w.writeInt(n.updatedAt.seconds)
            writeHashes(&w, n.deletedParagraphs)
            writeEditor(&w, n.editedBy)
        case .saga(let s):
            // Excluded: the device-local shadow of the day's text.
            w.writeArrayHeader(7)
            header(&w, key, vector)
            w.writeText(s.date)
            w.writeBytes(s.text)
            w.writeInt(s.updatedAt.seconds)
            writeHashes(&w, s.deletedParagraphs)
            writeEditor(&w, s.editedBy)
        case .plan(let p):
            // Excluded: local row ids. `due` is optional: a presence byte
            //   keeps "no due date" apart from any date.
            w.writeArrayHeader(9)
            header(&w, key, vector)
            w.writeText(p.title)
            w.writeText(p.notes)
            w.writeOptional(p.due) { $0.writeInt($1.seconds) }
            w.writeBool(p.isDone)
            w.writeInt(p.createdAt.seconds)
            w.writeInt(p.updatedAt.seconds)
            writeEditor(&w, p.editedBy)
        case .contact(let c):
            // Excluded: any link to a system address book entry (per device).
            //   `note` is optional: absent and "" hash differently.
            w.writeArrayHeader(8)
            header(&w, key, vector)
            w.writeText(c.name)
            writeTexts(&w, c.emails)
            writeTexts(&w, c.phones)
            w.writeOptional(c.note) { $0.writeText($1) }
            w.writeInt(c.updatedAt.seconds)
            writeEditor(&w, c.editedBy)
        case .setting(let s):
            // Per-device flags (backup opt-in, role) live in prefs, never here.
            w.writeArrayHeader(6)
            header(&w, key, vector)
            w.writeText(s.name)
            w.writeText(s.value)
            w.writeInt(s.updatedAt.seconds)
            writeEditor(&w, s.editedBy)
        case .memory(let e):
            // Excluded: when this device first saw the event (per device).
            w.writeArrayHeader(6)
            header(&w, key, vector)
            w.writeInt(e.at.seconds)
            w.writeText(e.kind)
            w.writeText(e.text)
            w.writeArrayHeader(e.buries.count)
            for k in e.buries { w.writeBytes(k.bytes) }
        case .device(let d):
            // Excluded: last-seen times (each device observes its own).
            w.writeArrayHeader(5)
            header(&w, key, vector)
            w.writeText(d.name)
            w.writeBytes(d.certificate)
            w.writeOptional(d.revocation) { $0.writeBytes($1) }
        }
        return SHA256.hash(separator: content.namespace.leafSeparator, w.bytes)
    }

    /// A resident body contributes the digest of its bytes; an offloaded
    /// pointer contributes its stamped contentHash, which is that same digest
    /// computed before the body was cleared. Residency never moves a leaf.
    public static func noteBodyLeafDigest(body: [UInt8]?, contentHash: [UInt8]) -> [UInt8] {
        if let body { return Note.bodyDigest(body) }
        return contentHash
    }

    private static func header(_ w: inout CBORWriter, _ key: RowKey, _ vector: VersionVector) {
        w.writeBytes(key.bytes)
        vector.write(to: &w)
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
