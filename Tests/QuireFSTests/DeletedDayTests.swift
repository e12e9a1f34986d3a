import Foundation
import QuireCore
import QuireStore
import XCTest

/// A journal day deleted through the folder and written again, by a plain
/// save or an editor's save by rename: the new text deletes the old
/// paragraphs (paragraph tombstones), so a sibling that still holds the
/// old day cannot bring them back; the file shows the new bytes exactly.
final class DeletedDayTests: XCTestCase {
    let key = SagaEntry.key(for: "2024-05-01")

    func tombstones(_ mount: DirectMount) throws -> Set<ParagraphHash> {
        guard case .saga(let day)? = try mount.store.row(.saga, key)?.content else { return [] }
        return Set(day.deletedParagraphs.compactMap { ParagraphHash(bytes: $0) })
    }

    func testADayDeletedAndWrittenAgainDeletesItsOldParagraphs() throws {
        let mount = try DirectMount()
        try mount.writeFile("saga/2024-05-01.md", "morning run\n\nevening rain\n")
        try mount.unlink("saga/2024-05-01.md")
        try mount.writeFile("saga/2024-05-01.md", "evening rain\n\na fresh start\n")
        XCTAssertEqual(try mount.text("saga/2024-05-01.md"), "evening rain\n\na fresh start\n")
        XCTAssertEqual(try tombstones(mount), [Paragraphs.paragraphHash("morning run")],
                       "the paragraph written again is not deleted")
    }

    func testAnEditorsSaveByRenameOverADeletedDayDeletesItsOldParagraphs() throws {
        let mount = try DirectMount()
        try mount.writeFile("saga/2024-05-01.md", "morning run\n")
        try mount.unlink("saga/2024-05-01.md")
        try mount.writeFile("saga/.2024-05-01.md.swp", "a fresh start\n")
        try mount.rename("saga/.2024-05-01.md.swp", "saga/2024-05-01.md")
        XCTAssertEqual(try mount.text("saga/2024-05-01.md"), "a fresh start\n")
        XCTAssertEqual(try tombstones(mount), [Paragraphs.paragraphHash("morning run")])
    }
}
