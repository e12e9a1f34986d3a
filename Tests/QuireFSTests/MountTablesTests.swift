import Foundation
import QuireCore
@testable import QuireFS
import QuireFuse
import QuireStore
import XCTest

/// The mount's tables alone, each with its own rule.
final class MountTablesTests: XCTestCase {
    let a = RowRef(namespace: .notebook, key: RowKey(bytes: [UInt8](repeating: 1, count: 16))!)
    let b = RowRef(namespace: .notebook, key: RowKey(bytes: [UInt8](repeating: 2, count: 16))!)

    func file(_ target: OpenFile.Target, inode: UInt64 = 10) -> OpenFile {
        OpenFile(target: target, inode: inode, flags: FuseOpenFlags(rawValue: O_RDWR), shown: [])
    }

    /// A row's open count is the number of handles on it, whatever moves them.
    func testOpenCountFollowsTheHandles() {
        var table = OpenFileTable()
        table.keep(WorkingCopy(title: "a", content: Array("x".utf8)), for: a)
        let first = table.add(file(.row(a))), second = table.add(file(.row(a)))
        XCTAssertEqual(table.openCount(of: a), 2)
        table.keep(WorkingCopy(title: "b", content: []), for: b)
        table.retarget(second, to: .row(b))
        XCTAssertEqual([table.openCount(of: a), table.openCount(of: b)], [1, 1])
        XCTAssertNil(table.dropCopyIfUnheld(a), "a handle still holds it")
        table.retarget(second, to: .scratch(3))
        XCTAssertEqual(table.openCount(of: b), 0)
        XCTAssertEqual(table.unheldCopies, [b])
        XCTAssertNotNil(table.dropCopyIfUnheld(b))
        XCTAssertNotNil(table.remove(first))
        XCTAssertNil(table.remove(first), "a handle closes once")
        XCTAssertEqual(table.openCount(of: a), 0)
        XCTAssertEqual(table.unheldCopies, [a])
    }

    /// Orphaning a row moves its handles off it with the text they had;
    /// a change through one orphan handle shows through the others on its inode.
    func testOrphansKeepTheirTextAndShareIt() throws {
        var table = OpenFileTable()
        table.keep(WorkingCopy(title: "a", content: Array("text".utf8)), for: a)
        let one = table.add(file(.row(a))), two = table.add(file(.row(a)))
        XCTAssertNotNil(table.orphan(a))
        XCTAssertEqual(table.openCount(of: a), 0)
        XCTAssertNil(table.copy(a))
        try table.changeOrphan(one) { $0 += Array("!".utf8) }
        guard case .orphan(let bytes, _)? = table[two]?.target else { return XCTFail("not an orphan") }
        XCTAssertEqual(bytes, Array("text!".utf8))
        XCTAssertEqual(table.orphan(onInode: 10)?.bytes, Array("text!".utf8))
    }

    /// Pages are kept only when the kernel holds exactly the version opened;
    /// an inode invalidation distrusts them; our own writes are recognised once.
    func testKernelCacheKeepsOnlyTheVersionItHolds() {
        var cache = KernelCacheTracker()
        XCTAssertFalse(cache.opened(5, version: 7), "nothing cached yet")
        XCTAssertTrue(cache.opened(5, version: 7))
        XCTAssertFalse(cache.opened(5, version: 8), "a newer version")
        XCTAssertFalse(cache.opened(5, version: nil), "unsaved text")
        XCTAssertFalse(cache.opened(5, version: 8))
        cache.invalidate(.inode(5))
        XCTAssertFalse(cache.opened(5, version: 8))
        cache.recordOwnWrite(a, version: 3)
        XCTAssertTrue(cache.isOwnWrite(a, version: 3))
        XCTAssertFalse(cache.isOwnWrite(a, version: 3), "consumed")
        cache.invalidate(.entry(parent: 2, name: CanonicalName("x.md")))
        cache.invalidate(.entry(parent: 2, name: CanonicalName("x.md")))
        XCTAssertEqual(cache.take(), [.inode(5), .entry(parent: 2, name: CanonicalName("x.md")), .inode(2)])
        XCTAssertEqual(cache.take(), [])
    }

    /// A pending name hides nothing listed, a row is pending under one name,
    /// and a detached row is found by title but not by name.
    func testNameIndexPendingAndDetached() throws {
        let mount = try DirectMount { try $0.putNote("Plan", "x\n") }
        let summaries = try mount.store.summaries(.notebook)
        let a = RowRef(namespace: .notebook, key: summaries[0].key)
        var names = NameIndex()
        names.install(NamespaceListing(namespace: .notebook, summaries: summaries))
        XCTAssertEqual(names.resolveRow(CanonicalName("Plan.md"), title: "Plan", kind: .note, in: .namespace(.notebook)), .row(a))
        names.addPending(CanonicalName("New.md"), in: .namespace(.notebook), b)
        names.addPending(CanonicalName("Newer.md"), in: .namespace(.notebook), b)
        XCTAssertEqual(names.pendingCount, 1)
        XCTAssertEqual(names.resolveRow(CanonicalName("Newer.md"), title: "Newer", kind: .note, in: .namespace(.notebook)), .row(b))
        XCTAssertEqual(names.displayName(b), "Newer.md")
        names.detach(a, DetachedRow(title: "Plan", name: CanonicalName("Plan.md"), folder: .namespace(.notebook), since: Date()))
        XCTAssertEqual(names.resolveRow(CanonicalName("Plan.md"), title: "Plan", kind: .note, in: .namespace(.notebook)), ResolvedName.none)
        XCTAssertEqual(names.detachedRow(titled: "Plan", in: .namespace(.notebook)), a)
        XCTAssertNotNil(names.reattach(a))
        XCTAssertEqual(names.resolveRow(CanonicalName("Plan.md"), title: "Plan", kind: .note, in: .namespace(.notebook)), .row(a))
        XCTAssertNil(names.resolveRow(CanonicalName("x.md"), title: "x", kind: .note, in: .namespace(.plans)), "not listed yet")
    }
}

/// Rendered rows kept between opens, each good only for the change number
/// it came from.
final class CleanCopiesTests: XCTestCase {
    func ref(_ i: UInt8) -> RowRef { RowRef(namespace: .notebook, key: RowKey(bytes: [UInt8](repeating: i, count: 16))!) }

    func testACopyIsHandedOutOnlyForItsChangeNumber() {
        var cache = CleanCopies()
        cache.keep(WorkingCopy(title: "a", content: Array("old".utf8), seq: 99), seq: 7, for: ref(1))
        XCTAssertEqual(cache.copy(ref(1), seq: 7)?.content, Array("old".utf8))
        XCTAssertNil(cache.copy(ref(1), seq: 8), "a newer stored version makes it stale")
        XCTAssertNil(cache.copy(ref(2), seq: 7))
        var dirty = WorkingCopy(title: "b", content: Array("unsaved".utf8))
        dirty.isDirty = true
        cache.keep(dirty, seq: 3, for: ref(2))
        XCTAssertNil(cache.copy(ref(2), seq: 3), "only what the store holds is kept")
        cache.forget(ref(1))
        XCTAssertNil(cache.copy(ref(1), seq: 7))
    }

    func testTheOldestGoFirstPastTheByteLimit() {
        var cache = CleanCopies()
        let size = CleanCopies.byteLimit / 20
        for i in 0..<30 { cache.keep(WorkingCopy(title: "\(i)", content: [UInt8](repeating: 0x61, count: size)), seq: 1, for: ref(UInt8(i))) }
        let kept = (0..<30).filter { cache.copy(ref(UInt8($0)), seq: 1) != nil }
        XCTAssertEqual(kept, Array(10..<30), "twenty fit; the first ten went")
    }

    /// Kept again, a copy is as young as its last keep: its older place in
    /// the order evicts nothing.
    func testACopyKeptAgainIsNotEvictedByItsOlderPlace() {
        var cache = CleanCopies()
        let size = CleanCopies.byteLimit / 20
        func keep(_ i: UInt8) { cache.keep(WorkingCopy(title: "\(i)", content: [UInt8](repeating: 0x61, count: size)), seq: 1, for: ref(i)) }
        for i in 0..<20 { keep(UInt8(i)) }
        keep(0)
        keep(20)
        XCTAssertNotNil(cache.copy(ref(0), seq: 1), "kept again just now")
        XCTAssertNil(cache.copy(ref(1), seq: 1), "the oldest one goes")
        XCTAssertEqual(cache.count, 20)
    }

    /// An editor's open after every save keeps one note again and again:
    /// the order's bookkeeping stays about as long as what is kept.
    func testKeepingTheSameNotesAgainKeepsTheOrderBounded() {
        var cache = CleanCopies()
        for round in 0..<20_000 {
            cache.keep(WorkingCopy(title: "n", content: Array("text \(round)".utf8)), seq: Int64(round), for: ref(UInt8(round % 3)))
            XCTAssertLessThanOrEqual(cache.queued, 2 * cache.count + 65)
        }
        XCTAssertEqual(cache.count, 3)
        XCTAssertEqual(cache.copy(ref(UInt8(19_999 % 3)), seq: 19_999)?.content, Array("text 19999".utf8))
    }

    /// Claims run out in the order they were last renewed; a renewed one
    /// waits a whole grace again, a removed one never comes back, and an
    /// expired one stays claimed until its owner renews or removes it.
    func testGracesRunOutByTheLastRenewal() {
        var claims = GraceTable<RowRef>()
        let start = Date(timeIntervalSince1970: 1_000_000)
        for i in 0..<5 { claims.renew(ref(UInt8(i)), at: start.addingTimeInterval(Double(i))) }
        XCTAssertEqual(claims.nextDeadline(grace: 30), start.addingTimeInterval(30))
        claims.renew(ref(0), at: start.addingTimeInterval(10))
        XCTAssertTrue(claims.remove(ref(2)))
        XCTAssertFalse(claims.remove(ref(2)))
        XCTAssertEqual(claims.nextDeadline(grace: 30), start.addingTimeInterval(31), "ref 1 is the oldest now")
        XCTAssertEqual(claims.expired(at: start.addingTimeInterval(30.5), grace: 30), [])
        XCTAssertEqual(claims.expired(at: start.addingTimeInterval(33.5), grace: 30), [ref(1), ref(3)])
        XCTAssertEqual(claims.expired(at: start.addingTimeInterval(33.5), grace: 30), [ref(1), ref(3)], "still held")
        claims.renew(ref(1), at: start.addingTimeInterval(33.5))
        XCTAssertTrue(claims.remove(ref(3)))
        XCTAssertEqual(claims.expired(at: start.addingTimeInterval(41), grace: 30), [ref(4), ref(0)], "the longest waiting first")
        XCTAssertEqual(claims.nextDeadline(grace: 30), start.addingTimeInterval(34))
        XCTAssertEqual(Set(claims.keys), [ref(0), ref(1), ref(4)])
        for r in [ref(0), ref(1), ref(4)] { XCTAssertTrue(claims.remove(r)) }
        XCTAssertNil(claims.nextDeadline(grace: 30))
        XCTAssertEqual(claims.expired(at: start.addingTimeInterval(100), grace: 30), [])
    }

    /// A file saved again and again renews one claim each time: the expiry
    /// order stays about as long as the claims held.
    func testRenewingTheSameKeysKeepsTheOrderBounded() {
        var claims = GraceTable<RowRef>()
        let start = Date(timeIntervalSince1970: 1_000_000)
        for round in 0..<20_000 {
            claims.renew(ref(UInt8(round % 3)), at: start.addingTimeInterval(Double(round) / 100))
            XCTAssertLessThanOrEqual(claims.queued, 2 * claims.count + 65)
        }
        XCTAssertEqual(claims.count, 3)
        XCTAssertEqual(claims.nextDeadline(grace: 30)?.timeIntervalSince(start) ?? 0, 229.97, accuracy: 1e-6, "round 19,997's")
    }
}
