import Foundation
import QuireCore
import QuireCrypto
import XCTest
@testable import QuireSync

final class AnchorTests: XCTestCase {
    let account = [UInt8](repeating: 0xAC, count: 32)
    let key = SecretBytes(randomCount: 32)
    let accountKey = SigningKeyPair()
    var keys: AnchorKeys { try! AnchorKeys.original(key, accountKey: accountKey.publicKey) }
    var dir = ""
    override func setUp() {
        dir = NSTemporaryDirectory() + "quire-anchor-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func snapshot(_ generation: UInt64) -> AnchorSnapshot {
        let actor = Actor(device: DeviceID(bytes: [UInt8](repeating: 1, count: 16))!, incarnation: 9)
        let base = Row.tombstone(.plans, RowKey(bytes: [UInt8](repeating: 2, count: 16))!, context: VersionVector())
        let plan = base.edited(by: actor, to: .plan(Plan(title: "Ship", createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 2))))
        let note = Row.tombstone(.notebook, RowKey(bytes: [UInt8](repeating: 3, count: 16))!, context: VersionVector())
            .edited(by: actor, to: .note(Note(title: "n", body: Array("words\n".utf8), createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1))))
        return AnchorSnapshot(generation: generation, rows: [plan, note])
    }

    /// A FIFO in the cloud folder under an anchor's, a device log's or the
    /// commit record's name (anything may land in a shared folder) would
    /// block a reader forever, and sync with it: each is skipped, or named
    /// as unusable, at once, and the real anchor is still found.
    func testAFIFOUnderACloudFolderNameBlocksNoReader() throws {
        let folder = CloudFolder(path: dir, accountID: account)
        try folder.write(try AnchorFile.seal(snapshot(3), accountID: account, keys: keys, at: Timestamp(seconds: 5)))
        let device = DeviceID(bytes: [UInt8](repeating: 7, count: 16))!
        for name in [CloudFolder.filePrefix(account) + " (fifo).qanchor", folder.deviceLogPath(of: device), folder.commitRecordPath] {
            XCTAssertEqual(mkfifo(name.hasPrefix("/") ? name : dir + "/" + name, 0o600), 0, name)
        }
        let done = DispatchSemaphore(value: 0)
        let outcome = LockedResult()
        let (folderCopy, keysCopy, keyCopy) = (folder, keys, key)
        Thread.detachNewThread {
            let survey = try? folderCopy.survey(keys: keysCopy)
            let logs = try? folderCopy.deviceLogs(key: keyCopy)
            outcome.set((survey?.newest?.header.generation, logs?.unusable ?? [], folderCopy.committedGeneration(keys: keysCopy)))
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success else {
            for path in [folder.deviceLogPath(of: device), folder.commitRecordPath] { let fd = open(path, O_WRONLY | O_NONBLOCK); if fd >= 0 { close(fd) } }
            return XCTFail("reading the cloud folder blocked on a FIFO")
        }
        let (generation, unusable, committed) = try XCTUnwrap(outcome.get())
        XCTAssertEqual(generation, 3, "the real anchor is still found")
        XCTAssertEqual(unusable.count, 1)
        XCTAssertTrue(unusable.first?.contains("not a regular file") ?? false, "\(unusable)")
        XCTAssertNil(committed)
    }

    func testDecideIsTheSeedsComparison() {
        XCTAssertEqual(AnchorDecision.decide(local: 3, anchor: nil), .noAnchor)
        XCTAssertEqual(AnchorDecision.decide(local: 3, anchor: 4), .rolledBack(anchor: 4))
        XCTAssertEqual(AnchorDecision.decide(local: 3, anchor: 3), .current)
        XCTAssertEqual(AnchorDecision.decide(local: 5, anchor: 4), .current, "a dangling older anchor is harmless")
    }

    func testSealedAnchorOpensAndItsHeaderNeedsNoKey() throws {
        let bytes = try AnchorFile.seal(snapshot(7), accountID: account, keys: keys, at: Timestamp(seconds: 100))
        XCTAssertEqual(Array(bytes.prefix(8)), Array("QUIREANC".utf8))
        XCTAssertEqual(try AnchorFile.header(of: bytes, accountID: account).generation, 7)
        let (header, opened) = try AnchorFile.open(bytes, accountID: account, key: key)
        XCTAssertEqual(header.writtenAt, Timestamp(seconds: 100))
        XCTAssertEqual(opened.generation, 7)
        XCTAssertEqual(Set(opened.rows.map { LeafEncoding.leaf(of: $0)! }), Set(snapshot(7).rows.map { LeafEncoding.leaf(of: $0)! }))
        XCTAssertEqual(opened.rows.count, 2)
    }

    func testTheGraveyardRoundTripsAndAnAnchorWithoutOneStillOpens() throws {
        let actor = Actor(device: DeviceID(bytes: [UInt8](repeating: 1, count: 16))!, incarnation: 9)
        let context = VersionVector().adding(Dot(actor: actor, counter: 3), tag: 0xBEEF)
        let graves = [CollectedTombstone(namespace: .plans, key: RowKey(bytes: [UInt8](repeating: 5, count: 16))!, context: context),
                      CollectedTombstone(namespace: .notebook, key: RowKey(bytes: [UInt8](repeating: 4, count: 16))!, context: context)]
        var withGraves = snapshot(8)
        withGraves.graveyard = graves
        let (_, opened) = try AnchorFile.open(try AnchorFile.seal(withGraves, accountID: account, keys: keys, at: Timestamp(seconds: 1)),
                                              accountID: account, key: key)
        XCTAssertEqual(Set(opened.graveyard), Set(graves))
        XCTAssertEqual(opened.graveyard.map(\.namespace), [.notebook, .plans], "namespaces in order: one graveyard, one encoding")
        let ids = [DeviceID(bytes: [UInt8](repeating: 9, count: 16))!, DeviceID(bytes: [UInt8](repeating: 3, count: 16))!]
        let withRoster = AnchorSnapshot(generation: 8, rows: [], roster: ids)
        XCTAssertEqual(try AnchorSnapshot(decoding: withRoster.encoded()).roster, ids.sorted())
        XCTAssertNil(try AnchorSnapshot(decoding: snapshot(8).encoded()).roster, "an anchor from before the roster field names none")
        // The graveyard is complete from the first anchor on, or from the
        // first one written after an anchor that did not say.
        XCTAssertEqual(AnchorSnapshot.graveyardSince(generation: 1, previous: nil), 1)
        XCTAssertEqual(AnchorSnapshot.graveyardSince(generation: 4, previous: snapshot(3)), 4, "an older anchor without the field")
        let complete = AnchorSnapshot(generation: 5, rows: [], graveyardSince: 2)
        XCTAssertEqual(try AnchorSnapshot(decoding: complete.encoded()).graveyardSince, 2)
        XCTAssertEqual(AnchorSnapshot.graveyardSince(generation: 6, previous: complete), 2)
        XCTAssertTrue(complete.graveyardCovers(since: 1))
        XCTAssertFalse(complete.graveyardCovers(since: 0), "a device from before generation 2 may hold versions collected then")
        XCTAssertFalse(snapshot(3).graveyardCovers(since: 2))
        // Written before the graveyard existed: field 3 absent.
        XCTAssertEqual(try AnchorSnapshot(decoding: snapshot(8).encoded()).graveyard, [])
        XCTAssertEqual(snapshot(8).encoded(), AnchorSnapshot(generation: 8, rows: snapshot(8).rows, graveyard: []).encoded())
        // A malformed graveyard is refused, not skipped.
        let bad = CBORWriter.encode(.map([(.unsigned(1), .unsigned(8)), (.unsigned(2), .array([])), (.unsigned(3), .array([.array([.unsigned(999), .array([])])]))]))
        XCTAssertThrowsError(try AnchorSnapshot(decoding: bad))
        // The round that wrote it (field 6): absent before it existed, 16 bytes when there.
        let nonce = [UInt8](repeating: 5, count: 16)
        XCTAssertEqual(try AnchorSnapshot(decoding: AnchorSnapshot(generation: 8, rows: [], round: nonce).encoded()).round, nonce)
        XCTAssertNil(try AnchorSnapshot(decoding: snapshot(8).encoded()).round)
        let shortNonce = CBORWriter.encode(.map([(.unsigned(1), .unsigned(8)), (.unsigned(2), .array([])), (.unsigned(6), .bytes([1, 2]))]))
        XCTAssertThrowsError(try AnchorSnapshot(decoding: shortNonce))
    }

    func testATamperedHeaderOrBodyOrAWrongKeyNeverOpens() throws {
        let bytes = try AnchorFile.seal(snapshot(7), accountID: account, keys: keys, at: Timestamp(seconds: 100))
        var forged = bytes
        forged[23] = 9                               // generation 7 → 9 in the cleartext header
        XCTAssertEqual(try AnchorFile.header(of: forged, accountID: account).generation, 9)
        XCTAssertThrowsError(try AnchorFile.open(forged, accountID: account, key: key)) { e in
            guard case .doesNotOpen = e as? AnchorError else { return XCTFail("\(e)") }
        }
        var flipped = bytes
        flipped[bytes.count - 5] ^= 1
        XCTAssertThrowsError(try AnchorFile.open(flipped, accountID: account, key: key))
        XCTAssertThrowsError(try AnchorFile.open(bytes, accountID: account, key: SecretBytes(randomCount: 32)))
        XCTAssertThrowsError(try AnchorFile.header(of: bytes, accountID: [UInt8](repeating: 1, count: 32))) { e in
            XCTAssertEqual(e as? AnchorError, .otherAccount)
        }
        XCTAssertThrowsError(try AnchorFile.header(of: Array(bytes.prefix(20)), accountID: account)) { e in
            XCTAssertTrue("\(e)".contains("shorter than the header"), "\(e)")
        }
        var future = bytes
        future[8] = 3
        XCTAssertThrowsError(try AnchorFile.header(of: future, accountID: account)) { e in
            XCTAssertEqual(e as? AnchorError, .unsupportedFormat(3))
        }
    }

    func testTheHighestValidGenerationWinsOverConflictCopiesOlderAnchorsAndForgeries() throws {
        let folder = CloudFolder(path: dir, accountID: account)
        XCTAssertNil(try folder.newest(keys: keys), "no anchor")
        try folder.write(try AnchorFile.seal(snapshot(4), accountID: account, keys: keys, at: Timestamp(seconds: 1)))
        var mode = stat()
        XCTAssertEqual(stat(folder.anchorPath, &mode), 0)
        XCTAssertEqual(mode.st_mode & 0o777, 0o600)
        // A sync service's conflict copy of a newer round, and an older anchor put back.
        let newer = try AnchorFile.seal(snapshot(6), accountID: account, keys: keys, at: Timestamp(seconds: 2))
        let older = try AnchorFile.seal(snapshot(2), accountID: account, keys: keys, at: Timestamp(seconds: 0))
        let prefix = folder.anchorPath.replacingOccurrences(of: ".qanchor", with: "")
        XCTAssertTrue(FileManager.default.createFile(atPath: prefix + " (conflicted copy 2026-12-03).qanchor", contents: Data(newer)))
        XCTAssertTrue(FileManager.default.createFile(atPath: prefix + " (1).qanchor", contents: Data(older)))
        // A file claiming generation 99 that does not open with the key.
        var forged = newer
        forged[23] = 99
        XCTAssertTrue(FileManager.default.createFile(atPath: prefix + "-forged.qanchor", contents: Data(forged)))
        XCTAssertEqual(try folder.newest(keys: keys)?.1.generation, 6)
        XCTAssertEqual(try folder.survey(keys: keys).refused.map(\.generation), [99], "the forgery is named, not used")
        XCTAssertEqual(try folder.candidates().first?.header.generation, 99, "without the key only headers can be read")
        XCTAssertEqual(try folder.survey(keys: keys).unreadable, [], "every file so far has a header")
        // A sync service's placeholder (empty) and an interrupted download (cut short): named, not used.
        XCTAssertTrue(FileManager.default.createFile(atPath: prefix + " (2).qanchor", contents: Data()))
        XCTAssertTrue(FileManager.default.createFile(atPath: prefix + " (3).qanchor", contents: Data(newer.prefix(30))))
        let survey = try folder.survey(keys: keys)
        XCTAssertEqual(survey.unreadable, [prefix + " (2).qanchor", prefix + " (3).qanchor"])
        XCTAssertEqual(survey.newest?.snapshot.generation, 6)
        XCTAssertThrowsError(try CloudFolder(path: dir + "/missing", accountID: account).write(newer)) { e in
            XCTAssertTrue("\(e)".contains("is not a folder"), "\(e)")
        }
    }

    /// A whole anchor of another account under this account's name (copied
    /// in, a folder two accounts share) is never used, and is named as
    /// another account's, not as cut short or damaged: it is neither.
    func testAnotherAccountsWholeAnchorUnderThisNameIsNamedAsSuchNotAsDamaged() throws {
        let folder = CloudFolder(path: dir, accountID: account)
        try folder.write(try AnchorFile.seal(snapshot(3), accountID: account, keys: keys, at: Timestamp(seconds: 1)))
        let otherAccount = [UInt8](repeating: 0xBD, count: 32)
        let otherKeys = try AnchorKeys.original(SecretBytes(randomCount: 32), accountKey: SigningKeyPair().publicKey)
        let theirs = try AnchorFile.seal(snapshot(7), accountID: otherAccount, keys: otherKeys, at: Timestamp(seconds: 2))
        let path = folder.anchorPath.replacingOccurrences(of: ".qanchor", with: " (copied).qanchor")
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(theirs)))
        let survey = try folder.survey(keys: keys)
        XCTAssertEqual(survey.otherAccount, [path])
        XCTAssertEqual(survey.unreadable, [], "whole, so not called cut short or damaged")
        XCTAssertEqual(survey.newest?.snapshot.generation, 3, "never used")
        XCTAssertEqual(try folder.candidates().map(\.header.generation), [3])
    }

    /// Two anchors at one generation: the canonical file (each write
    /// replaces it, so it is the last one written, the committed round's)
    /// beats a copy beside it, even one whose writer's clock ran ahead.
    func testAtOneGenerationTheCanonicalAnchorBeatsACopyWrittenUnderAClockAhead() throws {
        let folder = CloudFolder(path: dir, accountID: account)
        var dangling = snapshot(3)
        dangling.rows.removeLast()
        let stale = try AnchorFile.seal(dangling, accountID: account, keys: keys, at: Timestamp(seconds: 5_000))
        try folder.write(stale)
        let prefix = folder.anchorPath.replacingOccurrences(of: ".qanchor", with: "")
        XCTAssertTrue(FileManager.default.createFile(atPath: prefix + " (conflicted copy).qanchor", contents: Data(stale)))
        // The committed round at the same generation, by a leader whose clock is behind.
        try folder.write(try AnchorFile.seal(snapshot(3), accountID: account, keys: keys, at: Timestamp(seconds: 1_000)))
        let newest = try XCTUnwrap(try folder.newest(keys: keys))
        XCTAssertEqual(newest.1.rows.count, 2, "the copy of the round that never committed was chosen")
        XCTAssertEqual(newest.0.writtenAt, Timestamp(seconds: 1_000))
        // Among copies alone, the time written still orders them.
        try FileManager.default.removeItem(atPath: folder.anchorPath)
        XCTAssertTrue(FileManager.default.createFile(atPath: prefix + " (2).qanchor",
                                                    contents: Data(try AnchorFile.seal(snapshot(3), accountID: account, keys: keys, at: Timestamp(seconds: 9_000)))))
        XCTAssertEqual(try folder.newest(keys: keys)?.0.writtenAt, Timestamp(seconds: 9_000))
    }

    func testAnAnchorOfTenThousandNotesIsWrittenQuickly() throws {
        // Size is the point here: the figure itself is measured by a benchmark.
        let actor = Actor(device: DeviceID(bytes: [UInt8](repeating: 1, count: 16))!, incarnation: 9)
        var rows: [Row] = []
        for i in 0..<10_000 {
            let key = RowKey(bytes: [UInt8](repeating: 0, count: 14) + [UInt8(i >> 8), UInt8(i & 0xFF)])!
            rows.append(Row.tombstone(.notebook, key, context: VersionVector()).edited(by: actor, to: .note(
                Note(title: "note \(i)", body: Array(String(repeating: "word ", count: 200 + i % 600).utf8),
                     createdAt: Timestamp(seconds: 1), updatedAt: Timestamp(seconds: 1)))))
        }
        let bytes = try AnchorFile.seal(AnchorSnapshot(generation: 1, rows: rows), accountID: account, keys: keys, at: Timestamp(seconds: 1))
        let (_, opened) = try AnchorFile.open(bytes, accountID: account, key: key)
        XCTAssertEqual(opened.rows.count, 10_000)
        XCTAssertEqual(opened.rows.map { LeafEncoding.leaf(of: $0) }, rows.map { LeafEncoding.leaf(of: $0) })
    }
}

final class LockedResult: @unchecked Sendable {
    private let lock = NSLock()
    private var value: (UInt64?, [String], UInt64?)?
    func set(_ v: (UInt64?, [String], UInt64?)) { lock.lock(); value = v; lock.unlock() }
    func get() -> (UInt64?, [String], UInt64?)? { lock.lock(); defer { lock.unlock() }; return value }
}
