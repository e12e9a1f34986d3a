import Foundation
import XCTest

/// An editor on one device has a note read; a sibling moves the note into
/// a folder; the editor saves by rename onto the name it read. The edit
/// lands in the moved note, on both devices, and no second note appears.
final class MovedNoteSaveEndToEndTests: TwoMountedDevicesTestCase {
    func testAnEditorsSaveByRenameFollowsANoteItsSiblingMoved() throws {
        try makeTwoMountedDevices()
        XCTAssertEqual(Syscall.writeFile(mount("a") + "/notebook/Ideas.md", "one\n\ntwo\n").errno, 0)
        try FileManager.default.createDirectory(atPath: mount("a") + "/notebook/Archive", withIntermediateDirectories: false)
        XCTAssertTrue(eventually(30) { (try? String(contentsOfFile: self.mount("b") + "/notebook/Ideas.md", encoding: .utf8)) == "one\n\ntwo\n" })
        XCTAssertTrue(eventually(30) { FileManager.default.fileExists(atPath: self.mount("b") + "/notebook/Archive") })

        // The editor on b: reads the note, waits, saves through a temp file.
        let ready = dir + "/ready", go = dir + "/go"
        let editor = Process()
        editor.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        editor.arguments = ["-c", """
            import os, sys, time
            path, ready, go = sys.argv[1:4]
            text = open(path).read()
            open(ready, "w").close()
            while not os.path.exists(go): time.sleep(0.05)
            with open(path + ".aB3dE9", "w") as f: f.write(text.replace("two", "two, edited on b"))
            os.replace(path + ".aB3dE9", path)
            """, mount("b") + "/notebook/Ideas.md", ready, go]
        try editor.run()
        XCTAssertTrue(eventually(10) { FileManager.default.fileExists(atPath: ready) })

        // The sibling moves it; b learns of the move.
        XCTAssertEqual(rename(mount("a") + "/notebook/Ideas.md", mount("a") + "/notebook/Archive/Ideas.md"), 0)
        XCTAssertTrue(eventually(30) {
            FileManager.default.fileExists(atPath: self.mount("b") + "/notebook/Archive/Ideas.md")
                && !FileManager.default.fileExists(atPath: self.mount("b") + "/notebook/Ideas.md")
        })
        XCTAssertTrue(FileManager.default.createFile(atPath: go, contents: nil))
        editor.waitUntilExit()
        XCTAssertEqual(editor.terminationStatus, 0)

        for device in ["b", "a"] {
            XCTAssertTrue(eventually(30) {
                (try? String(contentsOfFile: self.mount(device) + "/notebook/Archive/Ideas.md", encoding: .utf8)) == "one\n\ntwo, edited on b\n"
            }, device)
            XCTAssertTrue(eventually(5) { !FileManager.default.fileExists(atPath: self.mount(device) + "/notebook/Ideas.md") }, device)
            let names = try FileManager.default.contentsOfDirectory(atPath: mount(device) + "/notebook")
            XCTAssertEqual(names.sorted(), ["Archive"], device)
        }
    }
}
