import Foundation
import Glibc
import QuireCore
@testable import QuireFS
import QuireFuse
import XCTest

/// `.quireignore`: gitignore patterns that keep paths of the notebook tree
/// on this device.
final class IgnoreRulesTests: XCTestCase {
    func rules(_ text: String) -> IgnoreRules { IgnoreRules(Array(text.utf8)) }

    func testPatterns() {
        let r = rules("# build output\n*.tmp\n/secret.md\nbuild/\ndocs/**/draft-?.md\n!keep.tmp\n\\#literal\n")
        XCTAssertEqual(r.verdict(["a.tmp"], isFolder: false), true)
        XCTAssertEqual(r.verdict(["x", "y", "a.tmp"], isFolder: false), true, "a name pattern matches at any depth")
        XCTAssertEqual(r.verdict(["keep.tmp"], isFolder: false), false, "taken back by a later !")
        XCTAssertEqual(r.verdict(["secret.md"], isFolder: false), true)
        XCTAssertNil(r.verdict(["x", "secret.md"], isFolder: false), "anchored to the ignore file's folder")
        XCTAssertEqual(r.verdict(["build"], isFolder: true), true)
        XCTAssertNil(r.verdict(["build"], isFolder: false), "folders only")
        XCTAssertEqual(r.verdict(["docs", "draft-1.md"], isFolder: false), true, "** matches no folder too")
        XCTAssertEqual(r.verdict(["docs", "a", "b", "draft-2.md"], isFolder: false), true)
        XCTAssertNil(r.verdict(["docs", "draft-10.md"], isFolder: false))
        XCTAssertEqual(r.verdict(["#literal"], isFolder: false), true)
        XCTAssertNil(r.verdict(["note.md"], isFolder: false))
        XCTAssertTrue(IgnoreRules.glob(Array("[a-c]?.png".utf8)[...], Array("b1.png".utf8)[...]))
        XCTAssertFalse(IgnoreRules.glob(Array("[!a-c]?.png".utf8)[...], Array("b1.png".utf8)[...]))
        XCTAssertFalse(IgnoreRules.glob(Array("*.md".utf8)[...], Array("a/b.md".utf8)[...]), "* stays within a component")
        XCTAssertTrue(IgnoreRules.glob(Array("logs/**".utf8)[...], Array("logs/a/b".utf8)[...]))
    }

    func testIgnoredFilesStayLocalAndAreCounted() throws {
        let mount = try DirectMount()
        try mount.mkdir("notebook/Project")
        try mount.writeFile("notebook/.quireignore", "*.log\nbuild/\n")
        try mount.writeFile("notebook/Project/run.log", "local")
        try mount.writeFile("notebook/Project/notes.md", "synced\n")
        try mount.mkdir("notebook/Project/build")
        try mount.writeFile("notebook/Project/build/out.bin", "local too")
        XCTAssertEqual(try mount.text("notebook/Project/run.log"), "local")
        XCTAssertEqual(try mount.text("notebook/Project/build/out.bin"), "local too")
        XCTAssertEqual(try mount.list("notebook/Project"), ["build", "notes.md", "run.log"])
        XCTAssertEqual(try mount.liveTitles(.notebook), ["Project", "build", "notes"], "the folder syncs, its files do not")
        let ignored = mount.fileSystem.locked { mount.fileSystem.ignoredNotebookFiles() }
        XCTAssertEqual(ignored.count, 2, "\(ignored)")
        // A rule taken out: new files of that name are rows again.
        try mount.writeFile("notebook/.quireignore", "build/\n")
        try mount.writeFile("notebook/Project/other.log", "synced now")
        XCTAssertTrue(try mount.liveTitles(.notebook).contains("other.log"))
        // A name renamed onto an ignored one becomes local.
        try mount.rename("notebook/Project/other.log", "notebook/Project/build/moved.log")
        XCTAssertEqual(try mount.text("notebook/Project/build/moved.log"), "synced now")
    }
}
