import QuireCore
import XCTest

/// The folder tree in the row model: the fields a tree adds, their leaves,
/// and how concurrent versions resolve.
final class NotebookTreeModelTests: XCTestCase {
    let deviceA = DeviceID(bytes: [UInt8](repeating: 0xA1, count: 16))!
    let deviceB = DeviceID(bytes: [UInt8](repeating: 0xB2, count: 16))!
    let key = RowKey(bytes: [UInt8](repeating: 7, count: 16))!

    func note(_ title: String, _ body: String, updated: Int64, placed: Int64? = nil, folder: RowKey? = nil,
              kind: NoteKind = .note) -> Note {
        var n = Note(title: title, body: Array(body.utf8), createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: updated),
                     kind: kind, folder: folder)
        n.placedAt = placed.map { Timestamp(seconds: $0) }
        return n
    }

    func head(_ device: DeviceID, _ content: Note) -> RowHead {
        RowHead(dot: Dot(actor: Actor(device: device, incarnation: 1), counter: 2), content: .note(content))
    }

    /// A rename on one device and an edit on another at the same time:
    /// the rename stands and both texts are kept, though the edit is later.
    func testARenameSurvivesAConcurrentLaterEdit() {
        let folder = RowKey(bytes: [UInt8](repeating: 9, count: 16))!
        let renamed = head(deviceA, note("New title", "one\n", updated: 10, placed: 10, folder: folder))
        let edited = head(deviceB, note("Old title", "one\n\ntwo\n", updated: 20))
        for order in [[renamed, edited], [edited, renamed]] {
            guard case .note(let shown)? = RowView.resolve(order) else { return XCTFail("no view") }
            XCTAssertEqual(shown.title, "New title")
            XCTAssertEqual(shown.folder, folder)
            XCTAssertEqual(String(decoding: shown.body ?? [], as: UTF8.self), "one\n\ntwo\n")
        }
        // Two renames: the later one.
        let again = head(deviceB, note("Newer title", "one\n", updated: 5, placed: 12))
        guard case .note(let shown)? = RowView.resolve([renamed, again]) else { return XCTFail("no view") }
        XCTAssertEqual(shown.title, "Newer title")
    }

    /// Attachments resolve to the last writer's bytes, never a text union.
    func testAttachmentsTakeTheLastWritersBytes() {
        let a = head(deviceA, note("photo.jpg", "AAAA", updated: 10, kind: .file))
        let b = head(deviceB, note("photo.jpg", "BBBB", updated: 11, kind: .file))
        guard case .note(let shown)? = RowView.resolve([a, b]) else { return XCTFail("no view") }
        XCTAssertEqual(shown.body, Array("BBBB".utf8))
        let row = Row(namespace: .notebook, key: key, context: VersionVector().adding(a.dot, tag: a.tag).adding(b.dot, tag: b.tag), heads: [a, b])
        XCTAssertEqual(ConflictCopy.losingVersions(of: row).map(\.dot), [a.dot])
        XCTAssertEqual(ConflictCopy.title(of: note("photo.jpg", "", updated: 1_764_775_800, kind: .file), writtenBy: a.dot),
                       "photo.sync-conflict-20251203-153000-a1a1a1a1.jpg")
    }

    /// A plain note at the top hashes as before the tree (no leaf changes
    /// at the upgrade); every tree field changes the leaf; all round-trip.
    func testTreeFieldsLeavesAndCodec() throws {
        let plain = note("Plain", "text\n", updated: 3)
        XCTAssertFalse(plain.hasTreeFields)
        var variants = [plain]
        var inFolder = plain; inFolder.folder = key; variants.append(inFolder)
        var file = plain; file.kind = .file; variants.append(file)
        var timed = plain; timed.modifiedAt = 1_000_000_000_123; variants.append(timed)
        var placed = plain; placed.placedAt = Timestamp(seconds: 4); variants.append(placed)
        let digests = variants.map { LeafEncoding.contentDigest(.note($0)) }
        XCTAssertEqual(Set(digests).count, variants.count, "each field is hashed")
        for v in variants {
            let decoded = try RowContent.decode(.notebook, fields: try CBORReader.decode(CBORWriter.encode(RowContent.note(v).fields())))
            XCTAssertEqual(decoded, .note(v))
            XCTAssertEqual(v.storedFields(), CBORWriter.encode(RowContent.note(v).fields(includeBody: false)), "streamed = tree encoding")
        }
        var folderWithBody = RowContent.note(note("F", "x", updated: 1, kind: .folder)).fields()
        if case .map(var m) = folderWithBody { m.append((.unsigned(99), .unsigned(0))); folderWithBody = .map(m) }
        XCTAssertThrowsError(try RowContent.decode(.notebook, fields: folderWithBody), "a folder with a body is refused")
    }
}
