import QuireCore
@testable import QuireFS
import QuireFuse
import XCTest

/// The rename planner alone: tables' state in, a plan out, no mount and no store.
final class RenamePlannerTests: XCTestCase {
    let notebook = Folder.namespace(.notebook)
    let fresh = RowKey(bytes: [UInt8](repeating: 0xEE, count: 16))!

    func row(_ byte: UInt8, _ namespace: Namespace = .notebook) -> RowRef {
        RowRef(namespace: namespace, key: RowKey(bytes: [UInt8](repeating: byte, count: 16))!)
    }

    func request(_ name: String, _ newName: String, in folder: Folder? = nil, to newFolder: Folder? = nil,
                 flags: FuseRenameFlags = []) -> RenameRequest {
        RenameRequest(from: folder ?? notebook, name: CanonicalName(name), to: newFolder ?? folder ?? notebook,
                      newName: CanonicalName(newName), flags: flags)
    }

    func facts(_ source: ResolvedName, _ target: ResolvedName = .none, sourceInode: UInt64? = 100, targetInode: UInt64? = nil,
               newRows: Set<RowRef> = [], sourceTitle: String = "", reclaimable: RowRef? = nil) -> RenameFacts {
        RenameFacts(source: source, target: target, sourceInode: sourceInode, targetInode: targetInode ?? (target == .none ? nil : 200),
                    newRows: newRows, sourceTitle: sourceTitle, reclaimable: reclaimable, freshKey: fresh)
    }

    func refusal(_ request: RenameRequest, _ facts: RenameFacts) -> RenameRefusal? {
        do { _ = try RenamePlanner.plan(request, facts); return nil } catch { return error }
    }

    /// A save by rename of one row over another: the target keeps its key,
    /// the source becomes a tombstone, the target's open files become
    /// orphans, and the source's open files follow its inode into the target.
    func testSaveByRenameOfARowOverAnother() throws {
        let temp = row(1), note = row(2)
        let plan = try RenamePlanner.plan(request("Draft.md", "Plan.md"), facts(.row(temp), .row(note)))
        XCTAssertEqual(plan.store, .replace(target: note, title: nil, bytes: .row(temp), removing: temp, sourceName: "Draft.md"))
        XCTAssertEqual(plan.scratch, [])
        XCTAssertEqual(plan.tables, [.settleReplacedSource(temp), .orphanOpenFiles(note), .repoint(inode: 100, to: .row(note)),
                                     .moveOpenFiles(inode: 100, to: note)])
        XCTAssertEqual(plan.byteSources, [.row(temp)])
        // A source never committed has no stored row to tombstone.
        let fromNew = try RenamePlanner.plan(request("Draft.md", "Plan.md"), facts(.row(temp), .row(note), newRows: [temp]))
        XCTAssertEqual(fromNew.store, .replace(target: note, title: nil, bytes: .row(temp), removing: nil, sourceName: "Draft.md"))
    }

    /// A note renamed to a free name keeps its row (retitled); one never
    /// committed only changes its pending name; a journal day (keyed by
    /// its date) becomes the row of the new date.
    func testRenameToAFreeName() throws {
        let note = row(1)
        let retitle = try RenamePlanner.plan(request("A.md", "B.md"), facts(.row(note)))
        let top = Placement(kind: .note, folder: nil)
        XCTAssertEqual(retitle.store, .retitle(note, title: "B", placement: top))
        XCTAssertEqual(retitle.tables, [.retitleCopy(note, title: "B", placement: top)])

        let pending = try RenamePlanner.plan(request("A.md", "B.md"), facts(.row(note), newRows: [note]))
        XCTAssertNil(pending.store)
        XCTAssertEqual(pending.tables, [.renamePending(note, to: CanonicalName("B.md"), in: notebook, title: "B", placement: top)])

        let day = row(3, .saga), saga = Folder.namespace(.saga)
        let newDay = RowRef(namespace: .saga, key: SagaEntry.key(for: "2024-05-02"))
        let moved = try RenamePlanner.plan(request("2024-05-01.md", "2024-05-02.md", in: saga), facts(.row(day)))
        XCTAssertEqual(moved.store, .replace(target: newDay, title: "2024-05-02", bytes: .row(day), removing: day, sourceName: "2024-05-01.md"))
        XCTAssertEqual(moved.tables, [.settleReplacedSource(day), .repoint(inode: 100, to: .row(newDay)), .moveOpenFiles(inode: 100, to: newDay)])
    }

    /// vim's backup step: the note goes to a scratch name and is detached
    /// (hidden, waiting for its name to come back); its open files follow
    /// it to the scratch file with the text they had.
    func testRowRenamedToAScratchNameIsDetached() throws {
        let note = row(1)
        let backup = ScratchPlace(folder: notebook, name: CanonicalName("Plan.md~"))
        let plan = try RenamePlanner.plan(request("Plan.md", "Plan.md~"), facts(.row(note), sourceTitle: "Plan"))
        XCTAssertNil(plan.store)
        XCTAssertEqual(plan.scratch, [.write(backup, .row(note))])
        XCTAssertEqual(plan.tables, [.detach(note, title: "Plan", name: CanonicalName("Plan.md"), folder: notebook),
                                     .repoint(inode: 100, to: .scratch(notebook, backup.name)),
                                     .moveRowHandlesToScratch(note, backup, text: .row(note))])
        // A file never committed is simply no longer pending.
        let fromNew = try RenamePlanner.plan(request("Plan.md", "Plan.md~"), facts(.row(note), newRows: [note]))
        XCTAssertEqual(Array(fromNew.tables.prefix(2)), [.forgetPending(note), .markClean(note)])
    }

    /// A temp file renamed over a note (the common atomic save), and onto
    /// a free name that a detached row had: that row is taken back first.
    func testScratchFileRenamedOntoRowNames() throws {
        let note = row(2)
        let temp = ScratchPlace(folder: notebook, name: CanonicalName(".Plan.md.swp"))
        let over = try RenamePlanner.plan(request(".Plan.md.swp", "Plan.md"), facts(.scratch(notebook, temp.name), .row(note)))
        XCTAssertEqual(over.store, .replace(target: note, title: nil, bytes: .scratch(temp), removing: nil, sourceName: ".Plan.md.swp"))
        XCTAssertEqual(over.scratch, [.remove(temp)])
        XCTAssertEqual(over.tables, [.orphanOpenFiles(note), .repoint(inode: 100, to: .row(note)), .adoptScratchHandles(inode: 100, to: note)])

        let detached = row(7)
        let back = try RenamePlanner.plan(request(".Plan.md.swp", "Plan.md"), facts(.scratch(notebook, temp.name), reclaimable: detached))
        XCTAssertEqual(back.reclaim, detached)
        let top = Placement(kind: .note, folder: nil)
        XCTAssertEqual(back.store, .replace(target: detached, title: "Plan", bytes: .scratch(temp), removing: nil, sourceName: ".Plan.md.swp",
                                            placement: top))

        let created = try RenamePlanner.plan(request(".Plan.md.swp", "Plan.md"), facts(.scratch(notebook, temp.name)))
        XCTAssertNil(created.reclaim)
        XCTAssertEqual(created.store, .replace(target: RowRef(namespace: .notebook, key: fresh), title: "Plan", bytes: .scratch(temp),
                                               removing: nil, sourceName: ".Plan.md.swp", placement: top))
    }

    /// RENAME_EXCHANGE of a scratch file and a note: the note's open files
    /// go to the scratch name before the scratch file's are adopted into
    /// the note (the other order moved the adopted ones straight back).
    func testExchangeOfAScratchFileAndANote() throws {
        let note = row(2)
        let temp = ScratchPlace(folder: notebook, name: CanonicalName(".Plan.md.new"))
        let plan = try RenamePlanner.plan(request(".Plan.md.new", "Plan.md", flags: .exchange),
                                          facts(.scratch(notebook, temp.name), .row(note), targetInode: 200))
        XCTAssertEqual(plan.store, .replace(target: note, title: nil, bytes: .scratch(temp), removing: nil, sourceName: ".Plan.md.new"))
        XCTAssertEqual(plan.scratch, [.write(temp, .row(note))])
        XCTAssertEqual(plan.tables, [.repoint(inode: 100, to: .row(note)), .repoint(inode: 200, to: .scratch(notebook, temp.name)),
                                     .moveRowHandlesToScratch(note, temp, text: .row(note)), .adoptScratchHandles(inode: 100, to: note)])
        XCTAssertEqual(Set(plan.byteSources), [.scratch(temp), .row(note)])

        let a = row(1)
        let rows = try RenamePlanner.plan(request("A.md", "B.md", flags: .exchange), facts(.row(a), .row(note), targetInode: 200))
        XCTAssertEqual(rows.store, .exchange(a, note))
        XCTAssertEqual(rows.tables.last, .swapOpenFiles(100, 200, a, note))
    }

    func testScratchFilesRenameAmongThemselves() throws {
        let from = ScratchPlace(folder: notebook, name: CanonicalName(".a.tmp")), to = ScratchPlace(folder: notebook, name: CanonicalName(".b.tmp"))
        let plan = try RenamePlanner.plan(request(".a.tmp", ".b.tmp", flags: .exchange), facts(.scratch(notebook, from.name), .scratch(notebook, to.name)))
        XCTAssertEqual(plan.scratch, [.rename(from: from, to: to, flags: FuseRenameFlags.exchange.rawValue)])
        XCTAssertEqual(plan.tables, [.repoint(inode: 100, to: .scratch(notebook, to.name)), .repoint(inode: 200, to: .scratch(notebook, from.name))])
    }

    func testRefusals() {
        let note = row(1), other = row(2)
        XCTAssertEqual(refusal(request("A.md", "B.md"), facts(.none))?.error, .noEntry)
        XCTAssertEqual(refusal(request("A.md", "B.md", flags: .noReplace), facts(.row(note), .row(other)))?.error, .exists)
        XCTAssertEqual(refusal(request("A.md", "B.md", flags: .exchange), facts(.row(note)))?.error, .noEntry)
        XCTAssertEqual(refusal(request("A.md", "B.md", flags: [.exchange, .noReplace]), facts(.row(note), .row(other)))?.error, .invalid)
        XCTAssertEqual(refusal(request("A.md", "B.md", flags: .whiteout), facts(.row(note)))?.error, .invalid)
        XCTAssertEqual(refusal(request("A.md", "A.md", to: .namespace(.plans)), facts(.row(note)))?.error, .crossDevice)
        XCTAssertEqual(refusal(request(".a.swp", "B.md"), facts(.scratch(notebook, CanonicalName(".a.swp")), .scratch(notebook, CanonicalName("B.md"))))?.error,
                       .crossDevice)
        let long = String(repeating: "é", count: 130) + ".md"
        let tooLong = refusal(request("A.md", long), facts(.row(note)))
        XCTAssertEqual(tooLong?.error, .nameTooLong)
        XCTAssertNotNil(tooLong?.message)
        let memory = Folder.namespace(.memory)
        let readOnly = refusal(request("a.md", "b.md", in: memory), facts(.row(row(1, .memory))))
        XCTAssertEqual(readOnly?.error, .permissionDenied)
        XCTAssertEqual(readOnly?.message, "memory is read-only: memory is append-only")
        // The same file under both names: nothing to do.
        XCTAssertEqual(try RenamePlanner.plan(request("A.md", "a.md"), facts(.row(note), .row(note))), RenamePlan())
    }
}
