import Foundation
import XCTest

/// The semantics of issue 3, each through a real `quire mount`.
final class MountSemanticsTests: XCTestCase {
    var device: MountedDevice!

    override func tearDown() {
        device?.close()
        device = nil
    }

    func testLayoutNamesSizesTimesAndStableInodes() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "First"], home: home, stdin: Array("hello\n".utf8)).status, 0)
            XCTAssertEqual(try quire(["put", "plans", "Buy milk", "--notes", "oat", "--due", "2024-05-01"], home: home).status, 0)
            XCTAssertEqual(try quire(["put", "contacts", "Ann Lee", "--email", "ann@example.org", "--phone", "+1 555"], home: home).status, 0)
            XCTAssertEqual(try quire(["put", "settings", "theme", "dark"], home: home).status, 0)
            XCTAssertEqual(try quire(["put", "saga", "2024-05-01"], home: home, stdin: Array("a day\n".utf8)).status, 0)
            XCTAssertEqual(try quire(["put", "memory", "visit"], home: home, stdin: Array("went out".utf8)).status, 0)
        }
        let top = try FileManager.default.contentsOfDirectory(atPath: device.mountpoint).sorted()
        XCTAssertEqual(top, [".quire", "contacts", "memory", "notebook", "plans", "saga", "settings"])
        XCTAssertEqual(try device.text("notebook/First.md"), "hello\n")
        let plan = try device.text("plans/Buy milk.ics")
        XCTAssertTrue(plan.hasPrefix("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n") && plan.hasSuffix("END:VTODO\r\nEND:VCALENDAR\r\n"), plan)
        for line in ["SUMMARY:Buy milk", "DESCRIPTION:oat", "DUE;VALUE=DATE:20240501", "STATUS:NEEDS-ACTION"] {
            XCTAssertTrue(plan.contains("\r\n" + line + "\r\n"), plan)
        }
        XCTAssertFalse(plan.contains("DTSTAMP:1970"), plan)
        let card = try device.text("contacts/Ann Lee.vcf")
        XCTAssertTrue(card.hasPrefix("BEGIN:VCARD\r\nVERSION:4.0\r\nUID:"), card)
        XCTAssertTrue(card.hasSuffix("\r\nFN:Ann Lee\r\nEMAIL:ann@example.org\r\nTEL:+1 555\r\nEND:VCARD\r\n"), card)
        XCTAssertEqual(try device.text("settings/theme.txt"), "dark\n")
        XCTAssertEqual(try device.text("saga/2024-05-01.md"), "a day\n")
        let memory = try FileManager.default.contentsOfDirectory(atPath: device.path("memory"))
        XCTAssertEqual(memory.count, 1)
        XCTAssertTrue(memory[0].hasSuffix(" visit.txt"), memory[0])
        XCTAssertTrue(try device.text("memory/" + memory[0]).hasSuffix("kind: visit\n\nwent out"))
        XCTAssertTrue(try device.text(".quire/status").contains("holds 1 notebook"))
        XCTAssertNotNil(try jsonObject(device.text(".quire/status.json")) as? [String: Any])
        XCTAssertEqual(try device.text(".quire/digest").split(separator: "\n").first?.count, 2 * (1 + 32 * 7 + 8))

        // st_size is the text's length, st_mtime the row's updatedAt.
        for file in ["notebook/First.md", "plans/Buy milk.ics", "contacts/Ann Lee.vcf", "settings/theme.txt", "saga/2024-05-01.md"] {
            XCTAssertEqual(Syscall.status(device.path(file))?.size, try device.read(file).count, file)
        }
        let row = try device.rows("notebook")[0]
        let json = try jsonObject(quire(["get", "notebook", "--key", row.key, "--json"], home: device.home).stdout) as! [String: Any]
        let before = Syscall.status(device.path("notebook/First.md"))!
        XCTAssertEqual(before.modified, json["updatedAt"] as! Int)

        // Inode numbers and times are the same after a remount.
        XCTAssertEqual(try device.unmount().status, 0)
        try device.mount()
        let after = Syscall.status(device.path("notebook/First.md"))!
        XCTAssertEqual(after.inode, before.inode)
        XCTAssertEqual(after.modified, before.modified)
    }

    func testWritesAreBufferedAndOneCloseIsOneVersion() throws {
        device = try MountedDevice()
        let path = device.path("notebook/Draft.md")
        XCTAssertEqual(Syscall.writeFile(path, chunks: (0..<50).map { Array("line \($0)\n".utf8) }).errno, 0)
        let rows = try device.rows("notebook")
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(rows[0].name, "Draft")
        XCTAssertTrue(try device.version("notebook", key: rows[0].key).hasSuffix(":1}"), "50 writes, one close: one version")

        // O_APPEND appends; O_TRUNC empties; ftruncate cuts.
        XCTAssertEqual(Syscall.writeFile(path, "appended\n", flags: O_WRONLY | O_APPEND).errno, 0)
        XCTAssertTrue(try device.text("notebook/Draft.md").hasSuffix("line 49\nappended\n"))
        XCTAssertEqual(Syscall.writeFile(path, "fresh\n", flags: O_WRONLY | O_TRUNC).errno, 0)
        XCTAssertEqual(try device.text("notebook/Draft.md"), "fresh\n")
        let descriptor = open(path, O_RDWR)
        XCTAssertEqual(ftruncate(descriptor, 3), 0)
        XCTAssertEqual(close(descriptor), 0)
        XCTAssertEqual(try quire(["get", "notebook", "Draft"], home: device.home).stdout, "fre")
        XCTAssertTrue(try device.version("notebook", key: rows[0].key).hasSuffix(":4}"))
        // truncate(2) by path is an edit of its own.
        XCTAssertEqual(truncate(path, 1), 0)
        XCTAssertEqual(try quire(["get", "notebook", "Draft"], home: device.home).stdout, "f")
        // Saving unchanged content makes no version.
        XCTAssertEqual(Syscall.writeFile(path, "f").errno, 0)
        XCTAssertTrue(try device.version("notebook", key: rows[0].key).hasSuffix(":5}"))
        // fsync commits before close.
        let syncing = open(path, O_WRONLY | O_TRUNC)
        _ = Array("synced".utf8).withUnsafeBytes { write(syncing, $0.baseAddress, $0.count) }
        XCTAssertEqual(fsync(syncing), 0)
        XCTAssertEqual(try quire(["get", "notebook", "Draft"], home: device.home).stdout, "synced")
        XCTAssertEqual(close(syncing), 0)
    }

    func testUnlinkIsATombstoneAndRenameRetitles() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "Old title"], home: home, stdin: Array("body".utf8)).status, 0)
            XCTAssertEqual(try quire(["put", "notebook", "Doomed"], home: home, stdin: Array("bye".utf8)).status, 0)
        }
        let keys = Dictionary(uniqueKeysWithValues: try device.rows("notebook").map { ($0.name, $0.key) })
        XCTAssertEqual(rename(device.path("notebook/Old title.md"), device.path("notebook/New title.md")), 0)
        XCTAssertEqual(try device.text("notebook/New title.md"), "body")
        XCTAssertFalse(FileManager.default.fileExists(atPath: device.path("notebook/Old title.md")))
        XCTAssertEqual(unlink(device.path("notebook/Doomed.md")), 0)
        let rows = try device.rows("notebook")
        XCTAssertEqual(rows.first { $0.key == keys["Old title"] }?.name, "New title", "a rename keeps the key")
        XCTAssertEqual(rows.first { $0.key == keys["Doomed"] }?.isTombstone, true)
        // Renaming out of the namespace folder is not a move of the row.
        XCTAssertEqual(Syscall.rename(device.path("notebook/New title.md"), device.path("plans/New title.ics")), EXDEV)
        XCTAssertEqual(try device.rows("plans").count, 0)
    }

    /// git checkout replaces a changed file by unlinking it and creating it
    /// anew: the note keeps its row (key, history), and leaves no tombstone.
    func testGitCheckoutOfANoteKeepsItsRow() throws {
        device = try MountedDevice()
        let git = "git -c user.email=q@example.org -c user.name=q --git-dir='\(device.directory)/repo.git' --work-tree='\(device.path("notebook"))'"
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Plan.md"), "one\n\ntwo\n").errno, 0)
        for step in ["init -q", "add Plan.md", "commit -qm first"] { XCTAssertEqual(shell("\(git) \(step)").status, 0, step) }
        let key = try XCTUnwrap(try device.rows("notebook").first { $0.name == "Plan" }?.key)
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Plan.md"), "one\n\ntwo\n\nthree\n").errno, 0)
        let checkout = shell("\(git) checkout -q HEAD -- Plan.md")
        XCTAssertEqual(checkout.status, 0, checkout.output)
        XCTAssertEqual(try device.text("notebook/Plan.md"), "one\n\ntwo\n")
        let rows = try device.rows("notebook")
        XCTAssertEqual(rows.map(\.key), [key], "\(rows)")
        XCTAssertFalse(rows[0].isTombstone)
    }

    /// GLib's g_file_set_contents (Qt's QSaveFile names its temp file the
    /// same way) and npm's write-file-atomic, the real libraries: the temp
    /// file (`Plan.md.XXXXXX`, `Plan.md.NNNNNNNNN`) is never a row, so a
    /// save leaves no tombstone. A file that only looks like one becomes a
    /// row when it stays.
    func testGLibAndNpmSavesLeaveNoTempRow() throws {
        device = try MountedDevice()
        let folder = device.path("notebook")
        XCTAssertEqual(Syscall.writeFile(folder + "/Plan.md", "one\n").errno, 0)
        let key = try XCTUnwrap(try device.rows("notebook").first { $0.name == "Plan" }?.key)
        for round in 1...3 {
            let glib = shell("/usr/bin/python3 -c \"from gi.repository import GLib; GLib.file_set_contents('\(folder)/Plan.md', b'glib \(round)\\n')\"")
            XCTAssertEqual(glib.status, 0, glib.output)
            XCTAssertEqual(try device.text("notebook/Plan.md"), "glib \(round)\n")
            let npm = shell("NODE_PATH=/usr/share/nodejs node -e \"require('write-file-atomic').sync('\(folder)/Plan.md', 'npm \(round)\\n')\"")
            XCTAssertEqual(npm.status, 0, npm.output)
            XCTAssertEqual(try device.text("notebook/Plan.md"), "npm \(round)\n")
        }
        let asynchronous = "require('write-file-atomic')('\(folder)/New.md', 'new\\n', e => process.exit(e ? 1 : 0))"
        XCTAssertEqual(shell("NODE_PATH=/usr/share/nodejs node -e \"\(asynchronous)\"").status, 0)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder).sorted(), ["New.md", "Plan.md"])
        let rows = try device.rows("notebook")
        XCTAssertEqual(rows.filter(\.isTombstone).count, 0, "no temp file was a row: \(rows)")
        XCTAssertEqual(rows.first { $0.name == "Plan" }?.key, key)
        XCTAssertEqual(Set(rows.map(\.name)), ["Plan", "New"])
        XCTAssertEqual(try device.text("notebook/New.md"), "new\n")

        // A file named like a temp file that stays is synced a moment later;
        // a descriptor open on it meanwhile reads on.
        XCTAssertEqual(Syscall.writeFile(folder + "/backup.tar.AbC123", "archive\n").errno, 0)
        let reader = open(folder + "/backup.tar.AbC123", O_RDONLY)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { Glibc.close(reader) }
        XCTAssertFalse(try device.rows("notebook").contains { $0.name == "backup.tar.AbC123" }, "waits first")
        XCTAssertTrue(eventually(10) { ((try? device.rows("notebook")) ?? []).contains { $0.name == "backup.tar.AbC123" } })
        XCTAssertEqual(try device.text("notebook/backup.tar.AbC123"), "archive\n")
        var buffer = [UInt8](repeating: 0, count: 64)
        XCTAssertEqual(pread(reader, &buffer, 64, 0), 8)
        XCTAssertEqual(String(decoding: buffer.prefix(8), as: UTF8.self), "archive\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: device.home + "/scratch/notebook/backup.tar.AbC123"), "the row holds it now")
    }

    /// A git repository kept inside the notebook (as Obsidian's git plugin
    /// keeps one): its lock files (`index.lock` renamed over `index`) and
    /// object temp files are never rows, so commits leave no tombstones,
    /// and linking an object's temp file to its name is never refused.
    func testAGitRepositoryInsideTheNotebookLeavesNoTombstones() throws {
        device = try MountedDevice()
        let git = "cd '\(device.path("notebook"))' && git -c user.email=q@example.org -c user.name=q"
        XCTAssertEqual(shell("\(git) init -q").status, 0)
        let afterInit = try device.rows("notebook").filter(\.isTombstone).count
        for round in 1...3 {
            XCTAssertEqual(Syscall.writeFile(device.path("notebook/Plan \(round).md"), "round \(round)\n").errno, 0)
            let commit = shell("\(git) add -A && \(git) commit -qm 'round \(round)'")
            XCTAssertEqual(commit.status, 0, commit.output)
        }
        let log = shell("\(git) log --oneline | wc -l")
        XCTAssertEqual(log.output.trimmingCharacters(in: .whitespacesAndNewlines), "3", log.output)
        let fsck = shell("\(git) fsck --strict 2>&1")
        XCTAssertEqual(fsck.status, 0, fsck.output)
        let rows = try device.rows("notebook")
        XCTAssertEqual(rows.filter(\.isTombstone).count, afterInit, "\(rows.filter(\.isTombstone).map(\.name))")
        XCTAssertFalse(rows.contains { $0.name.hasSuffix(".lock") || $0.name.hasPrefix("tmp_obj_") }, "\(rows.map(\.name))")
        // git links each object's temp file to its name in the same folder:
        // a temp file's link is a save, never refused.
        let status = try device.text(".quire/status")
        XCTAssertFalse(status.contains("link to "), status)
    }

    /// A SQLite database kept in the notebook (a Calibre library's
    /// metadata.db): its journal and WAL files come and go with each
    /// transaction and are never rows; the database file is one.
    func testASQLiteDatabaseInsideTheNotebookLeavesNoTombstones() throws {
        device = try MountedDevice()
        let database = device.path("notebook/library.db")
        for (step, sql) in ["create table books(title text)", "insert into books values ('one')",
                            "pragma journal_mode=wal; insert into books values ('two')", "insert into books values ('three')"].enumerated() {
            let run = shell("sqlite3 '\(database)' \"\(sql)\"")
            XCTAssertEqual(run.status, 0, "step \(step): \(run.output)")
        }
        let count = shell("sqlite3 '\(database)' 'pragma integrity_check; select count(*) from books'")
        XCTAssertEqual(count.output.split(separator: "\n").map(String.init), ["ok", "3"], count.output)
        let rows = try device.rows("notebook")
        XCTAssertEqual(rows.filter(\.isTombstone).map(\.name), [], "\(rows)")
        XCTAssertEqual(rows.map(\.name), ["library.db"])
    }

    func testSaveByRenameKeepsTheRowAndMakesOneVersion() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "Kept"], home: home, stdin: Array("one two\n".utf8)).status, 0)
            XCTAssertEqual(try quire(["put", "contacts", "Bo"], home: home).status, 0)
        }
        let key = try device.rows("notebook")[0].key
        // sed -i: temp file in the folder, renamed over the note.
        XCTAssertEqual(shell("sed -i 's/two/three/' '\(device.path("notebook/Kept.md"))'").status, 0)
        XCTAssertEqual(try device.text("notebook/Kept.md"), "one three\n")
        // Python os.replace.
        let python = "import os; p='\(device.path("notebook"))'; open(p+'/tmpXYZ.md','w').write('via python\\n'); os.replace(p+'/tmpXYZ.md', p+'/Kept.md')"
        XCTAssertEqual(shell("python3 -c \"\(python)\"").status, 0)
        XCTAssertEqual(try device.text("notebook/Kept.md"), "via python\n")
        // gedit-style hidden temp file.
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/.goutputstream-AB12"), "gedit\n").errno, 0)
        XCTAssertEqual(rename(device.path("notebook/.goutputstream-AB12"), device.path("notebook/Kept.md")), 0)
        XCTAssertEqual(try device.text("notebook/Kept.md"), "gedit\n")
        // Python's temp file was a note name: it was a row for a moment, and
        // a row any sibling may have pulled leaves a tombstone, never nothing.
        let rows = try device.rows("notebook")
        XCTAssertEqual(rows.filter { !$0.isTombstone }.map(\.key), [key], "no new live row: \(rows)")
        XCTAssertEqual(rows.filter(\.isTombstone).count, 1, "the temp row's tombstone: \(rows)")
        XCTAssertTrue(try device.version("notebook", key: key).hasSuffix(":4}"), "one version per save")
        // vim with backups (rename to name~, write a new file) keeps the row too.
        let vim = "HOME=\(device.directory) vim -u NONE -N -es -c 'set backup writebackup backupcopy=no' -c '%s/gedit/vim/' -c wq '\(device.path("notebook/Kept.md"))'"
        XCTAssertEqual(shell(vim).status, 0)
        XCTAssertEqual(try device.text("notebook/Kept.md"), "vim\n")
        // emacs (and vim where it can): rename to the backup name, write anew.
        XCTAssertEqual(rename(device.path("notebook/Kept.md"), device.path("notebook/Kept.md~")), 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: device.path("notebook/Kept.md")))
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Kept.md"), "emacs\n").errno, 0)
        XCTAssertEqual(try device.text("notebook/Kept.md~"), "vim\n", "the backup is a local scratch file")
        XCTAssertTrue(FileManager.default.fileExists(atPath: device.home + "/scratch/notebook/Kept.md~"))
        Thread.sleep(forTimeInterval: 6)   // past the grace a renamed-away row waits
        let afterBackup = try device.rows("notebook").filter { !$0.isTombstone }
        XCTAssertEqual(afterBackup.map(\.key), [key], "\(afterBackup)")
        XCTAssertEqual(try device.text("notebook/Kept.md"), "emacs\n")
        // A JetBrains IDE's safe write: the new text in x___jb_tmp___, x
        // renamed to x___jb_old___, the temp file renamed to x, the old one
        // removed. The row stays, and no temp row leaves a tombstone.
        let tombstones = try device.rows("notebook").filter(\.isTombstone).count
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Kept.md___jb_tmp___"), "jetbrains\n").errno, 0)
        XCTAssertEqual(rename(device.path("notebook/Kept.md"), device.path("notebook/Kept.md___jb_old___")), 0)
        XCTAssertEqual(rename(device.path("notebook/Kept.md___jb_tmp___"), device.path("notebook/Kept.md")), 0)
        XCTAssertEqual(unlink(device.path("notebook/Kept.md___jb_old___")), 0)
        XCTAssertEqual(try device.text("notebook/Kept.md"), "jetbrains\n")
        Thread.sleep(forTimeInterval: 6)
        let afterSafeWrite = try device.rows("notebook")
        XCTAssertEqual(afterSafeWrite.filter { !$0.isTombstone }.map(\.key), [key], "\(afterSafeWrite)")
        XCTAssertEqual(afterSafeWrite.filter(\.isTombstone).count, tombstones, "\(afterSafeWrite)")
        XCTAssertEqual(try device.text("notebook/Kept.md"), "jetbrains\n")
        // A note renamed to a backup name and never written again is deleted.
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Gone.md"), "bye\n").errno, 0)
        let goneKey = try XCTUnwrap(try device.rows("notebook").first { $0.name == "Gone" }?.key)
        XCTAssertEqual(rename(device.path("notebook/Gone.md"), device.path("notebook/Gone.md~")), 0)
        Thread.sleep(forTimeInterval: 6)
        XCTAssertFalse(try device.rows("notebook").contains { $0.key == goneKey && !$0.isTombstone })
        XCTAssertEqual(try device.text("notebook/Gone.md~"), "bye\n")
        // A contact saved by rename keeps its key as well.
        let contactKey = try device.rows("contacts")[0].key
        let card = "BEGIN:VCARD\nVERSION:4.0\nFN:Bo\nEMAIL:bo@example.org\nEND:VCARD\n"
        XCTAssertEqual(Syscall.writeFile(device.path("contacts/.Bo.vcf.tmp"), card).errno, 0)
        XCTAssertEqual(rename(device.path("contacts/.Bo.vcf.tmp"), device.path("contacts/Bo.vcf")), 0)
        XCTAssertEqual(try device.rows("contacts").map(\.key), [contactKey])
        XCTAssertTrue(try device.text("contacts/Bo.vcf").hasSuffix("FN:Bo\nEMAIL:bo@example.org\nEND:VCARD\n"), "kept as written")
    }

    func testRenameNoReplaceAndExchange() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "A"], home: home, stdin: Array("alpha".utf8)).status, 0)
            XCTAssertEqual(try quire(["put", "notebook", "B"], home: home, stdin: Array("beta".utf8)).status, 0)
        }
        let a = device.path("notebook/A.md"), b = device.path("notebook/B.md")
        XCTAssertEqual(Syscall.rename(a, b, flags: Syscall.noReplace), EEXIST)
        XCTAssertEqual(try device.text("notebook/B.md"), "beta")
        XCTAssertEqual(Syscall.rename(a, b, flags: Syscall.exchange), 0)
        XCTAssertEqual(try device.text("notebook/A.md"), "beta")
        XCTAssertEqual(try device.text("notebook/B.md"), "alpha")
        XCTAssertEqual(Syscall.rename(a, device.path("notebook/C.md"), flags: Syscall.exchange), ENOENT)
        XCTAssertEqual(Syscall.rename(a, device.path("notebook/C.md"), flags: Syscall.noReplace), 0)
        XCTAssertEqual(try device.rows("notebook").map(\.name).sorted(), ["B", "C"])
        XCTAssertEqual(try device.rows("notebook").filter(\.isTombstone).count, 0)
    }

    func testEditorJunkLivesInTheScratchArea() throws {
        device = try MountedDevice()
        let junk = [".Note.md.swp", ".Note.md.swx", "Note.md~", "4913", "#Note.md#", ".#Note.md", "._Note.md", ".DS_Store"]
        for name in junk {
            XCTAssertEqual(Syscall.writeFile(device.path("notebook/" + name), "junk \(name)").errno, 0, name)
            XCTAssertEqual(try device.text("notebook/" + name), "junk \(name)", name)
            XCTAssertTrue(FileManager.default.fileExists(atPath: device.home + "/scratch/notebook/" + name), name)
        }
        XCTAssertEqual(try device.rows("notebook").count, 0, "junk never becomes a row")
        XCTAssertEqual(unlink(device.path("notebook/4913")), 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: device.home + "/scratch/notebook/4913"))
        // A name that is not a row name (outside the notebook, where any
        // other file is an attachment) stays on this device and says so.
        XCTAssertEqual(Syscall.writeFile(device.path("plans/todo.txt"), "local").errno, 0)
        XCTAssertEqual(try device.rows("plans").count, 0)
        XCTAssertTrue(try device.text(".quire/status").contains("plans/todo.txt"))
        // Another folder's row file is refused there, so `mv` into it (a
        // copy and a delete, after rename's EXDEV) fails and deletes nothing.
        XCTAssertEqual(try quire(["put", "plans", "Ship"], home: device.home).status, 0)
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Ideas.md"), "ideas\n").errno, 0)
        for (file, into) in [("plans/Ship.ics", "saga/"), ("notebook/Ideas.md", "plans/"), ("notebook/Ideas.md", "saga/"),
                             ("plans/Ship.ics", "contacts/")] {
            XCTAssertNotEqual(shell("mv '\(device.path(file))' '\(device.path(into))'").status, 0, "\(file) into \(into)")
            XCTAssertTrue(FileManager.default.fileExists(atPath: device.path(file)), "\(file) into \(into)")
        }
        XCTAssertEqual(try device.rows("plans").count, 1)
        XCTAssertEqual(try device.text("notebook/Ideas.md"), "ideas\n")
        XCTAssertEqual(Syscall.writeFile(device.path("saga/2024-02-30.md"), "no such day").errno, EPERM)
        XCTAssertTrue(try device.text(".quire/status").contains("saga/ holds one journal day per file"))
        // Only the notebook has folders: elsewhere mkdir is refused with
        // EPERM and a line in the status.
        XCTAssertEqual(mkdir(device.path("plans/projects"), 0o755), -1)
        XCTAssertEqual(errno, EPERM)
        XCTAssertTrue(try device.text(".quire/status").contains("mkdir plans/projects refused"))
    }

    func testExtendedAttributes() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "Tagged", "--tags", "b,a"], home: home, stdin: Array("x".utf8)).status, 0)
        }
        let file = device.path("notebook/Tagged.md")
        let key = try device.rows("notebook")[0].key
        XCTAssertEqual(Syscall.attribute(file, "user.quire.key").value, key)
        XCTAssertEqual(Syscall.attribute(file, "user.quire.tags").value, "a,b")
        XCTAssertEqual(Syscall.attribute(file, "user.quire.resident").value, "1")
        XCTAssertEqual(Syscall.attribute(file, "user.quire.contentHash").value.count, 64)
        // Read-only: a write changes nothing and succeeds, as chmod does
        // (cp -a and mv across filesystems write back what they read).
        XCTAssertEqual(Syscall.setAttribute(file, "user.quire.key", "0000"), 0)
        XCTAssertEqual(Syscall.attribute(file, "user.quire.key").value, key)
        XCTAssertEqual(Syscall.setAttribute(file, "user.quire.tags", "work, home"), 0)
        let json = try jsonObject(quire(["get", "notebook", "Tagged", "--json"], home: device.home).stdout) as! [String: Any]
        XCTAssertEqual(json["tags"] as? [String], ["home", "work"])
        // Other user attributes are accepted for the session, never synced.
        XCTAssertEqual(Syscall.setAttribute(file, "user.com.apple.TextEncoding", "utf-8;134217984"), 0)
        XCTAssertEqual(Syscall.attribute(file, "user.com.apple.TextEncoding").value, "utf-8;134217984")
        XCTAssertEqual(Syscall.attribute(file, "user.unknown").errno, ENODATA)
        // Labels and ACLs are not kept: "not supported", which `ls -l`
        // remembers per device instead of asking again for every file.
        for name in ["security.selinux", "system.posix_acl_access", "trusted.x"] {
            XCTAssertEqual(Syscall.attribute(file, name).errno, EOPNOTSUPP, name)
            XCTAssertEqual(Syscall.attribute(device.path("notebook"), name).errno, EOPNOTSUPP, name)
        }
        XCTAssertEqual(Syscall.setAttribute(file, "security.selinux", "x"), EOPNOTSUPP)
    }

    func testEscapedLongAndDuplicateTitles() throws {
        let long = String(repeating: "é", count: 200)
        device = try MountedDevice { home in
            for title in ["..", ".hidden", "50% off", long] {
                XCTAssertEqual(try quire(["put", "notebook", title], home: home, stdin: Array(title.utf8)).status, 0, title)
            }
            XCTAssertEqual(try quire(["put", "notebook", "Same", "--new"], home: home, stdin: Array("one".utf8)).status, 0)
            XCTAssertEqual(try quire(["put", "notebook", "Same", "--new"], home: home, stdin: Array("two".utf8)).status, 0)
        }
        // A title with a slash (`quire put` reads one as a folder path).
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/a%2Fb.md"), "a/b").errno, 0)
        XCTAssertTrue(try device.rows("notebook").contains { $0.name == "a/b" })
        let names = try FileManager.default.contentsOfDirectory(atPath: device.path("notebook"))
        XCTAssertTrue(names.contains("a%2Fb.md"), "\(names)")
        XCTAssertTrue(names.contains("%2E..md"))
        XCTAssertTrue(names.contains("%2Ehidden.md"))
        XCTAssertTrue(names.contains("50% off.md"), "a % that reads as no escape stays as typed")
        XCTAssertEqual(try device.text("notebook/a%2Fb.md"), "a/b")
        // The name older builds listed is another title now: creating it
        // makes a new note, never writes over `50% off`.
        XCTAssertTrue(FileManager.default.createFile(atPath: device.path("notebook/50%25 off.md"), contents: Data("other".utf8)))
        XCTAssertEqual(try device.text("notebook/50% off.md"), "50% off")
        // A `%25` typed in a name (a URL-encoded download) is part of the
        // title: the file lists under the name it was made with, so a
        // mirror made by rsync --delete finds it there.
        XCTAssertTrue(FileManager.default.createFile(atPath: device.path("notebook/100%25 sure.md"), contents: Data("sure".utf8)))
        XCTAssertTrue(try FileManager.default.contentsOfDirectory(atPath: device.path("notebook")).contains("100%25 sure.md"))
        XCTAssertTrue(try device.rows("notebook").contains { $0.name == "100%25 sure" })
        let same = names.filter { $0.hasPrefix("Same") }.sorted { $0.count < $1.count }
        XCTAssertEqual(same.count, 2, "\(names)")
        XCTAssertEqual(same[0], "Same.md")
        XCTAssertTrue(same[1].hasPrefix("Same%~"), same[1])
        let sameKeys = try device.rows("notebook").filter { $0.name == "Same" }.map(\.key).sorted()
        XCTAssertEqual(same[1], "Same%~" + sameKeys[1].prefix(8) + ".md", "the smallest key keeps the plain name")
        XCTAssertEqual(Set(try same.map { try device.text("notebook/" + $0) }), ["one", "two"])
        let longName = try XCTUnwrap(names.first { $0.hasPrefix("é") })
        XCTAssertLessThanOrEqual(longName.utf8.count, 255)
        XCTAssertEqual(try device.text("notebook/" + longName), long)
        // Renames keep working on escaped names, and decode back to the title.
        XCTAssertEqual(rename(device.path("notebook/a%2Fb.md"), device.path("notebook/c%2Fd.md")), 0)
        XCTAssertTrue(try device.rows("notebook").contains { $0.name == "c/d" })
    }

    func testChangesFromAnotherProcessShowWithinOneSecond() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "Shared"], home: home, stdin: Array("v1".utf8)).status, 0)
        }
        XCTAssertEqual(try device.text("notebook/Shared.md"), "v1")   // cached by the kernel now
        XCTAssertEqual(try quire(["put", "notebook", "Shared"], home: device.home, stdin: Array("version two".utf8)).status, 0)
        XCTAssertEqual(try quire(["put", "notebook", "Arrived"], home: device.home, stdin: Array("new".utf8)).status, 0)
        XCTAssertTrue(eventually(1) { (try? self.device.text("notebook/Shared.md")) == "version two" })
        XCTAssertTrue(eventually(1) { (try? self.device.text("notebook/Arrived.md")) == "new" })
        // A script that puts a note and reads it through the mount at once
        // finds it: a name not found makes the mount catch up with the store.
        for i in 0..<10 {
            XCTAssertEqual(try quire(["put", "notebook", "Now \(i)"], home: device.home, stdin: Array("now \(i)".utf8)).status, 0)
            XCTAssertEqual(try device.text("notebook/Now \(i).md"), "now \(i)")
        }
        // And one that lists the folder at once (`ls` after `quire put`):
        // opening a folder catches up too.
        for i in 0..<10 {
            XCTAssertEqual(try quire(["put", "notebook", "Listed \(i)"], home: device.home, stdin: Array("listed \(i)".utf8)).status, 0)
            XCTAssertTrue(try FileManager.default.contentsOfDirectory(atPath: device.path("notebook")).contains("Listed \(i).md"), "\(i)")
        }
        XCTAssertEqual(try quire(["rm", "notebook", "Arrived"], home: device.home).status, 0)
        XCTAssertTrue(eventually(1) { !FileManager.default.fileExists(atPath: self.device.path("notebook/Arrived.md")) })
    }

    /// `quire ls notebook` shows each row's path through the folders the
    /// mount shows, and get takes such a path (by title or file name).
    func testTheCommandLineShowsAndReadsFolderPaths() throws {
        device = try MountedDevice()
        try FileManager.default.createDirectory(atPath: device.path("notebook/Projects/Q1"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: device.path("notebook/Other"), withIntermediateDirectories: true)
        for (file, text) in [("Projects/Plan.md", "the plan"), ("Projects/Q1/Deep.md", "deep"), ("Other/Plan.md", "another plan"),
                             ("Projects/photo.png", "png")] {
            XCTAssertEqual(Syscall.writeFile(device.path("notebook/" + file), text).errno, 0, file)
        }
        XCTAssertEqual(try quire(["put", "notebook", "Two\nlines"], home: device.home, stdin: Array("t".utf8)).status, 0)
        let listed = try quire(["ls", "notebook"], home: device.home).stdout.split(separator: "\n").map { String($0.split(separator: " ").last ?? "") }
        XCTAssertEqual(Set(listed), ["Projects/", "Projects/Q1/", "Projects/Plan", "Projects/Q1/Deep", "Other/", "Other/Plan",
                                     "Projects/photo.png", "Two\\nlines"])
        let json = try jsonObject(quire(["ls", "notebook", "--json"], home: device.home).stdout) as! [[String: Any]]
        XCTAssertEqual(Set(json.compactMap { $0["path"] as? String }).count, 8)
        XCTAssertEqual(json.first { $0["path"] as? String == "Projects/Q1/" }?["kind"] as? String, "folder")
        XCTAssertEqual(try quire(["get", "notebook", "Projects/Plan.md"], home: device.home).stdout, "the plan")
        XCTAssertEqual(try quire(["get", "notebook", "Other/Plan"], home: device.home).stdout, "another plan")
        XCTAssertEqual(try quire(["get", "notebook", "Projects/Q1/Deep.md"], home: device.home).stdout, "deep")
        XCTAssertEqual(try quire(["get", "notebook", "Projects/photo.png"], home: device.home).stdout, "png")
        XCTAssertEqual(try quire(["get", "notebook", "Plan"], home: device.home).status, 1, "two notes of that title")
        XCTAssertEqual(try quire(["get", "notebook", "Nowhere/Plan.md"], home: device.home).status, 1)
        XCTAssertEqual(try quire(["rm", "notebook", "Other/Plan.md"], home: device.home).status, 0)
        XCTAssertEqual(try quire(["get", "notebook", "Plan"], home: device.home).stdout, "the plan", "one left")
    }

    /// `quire put` takes a path too: it replaces the note there, or makes
    /// one in that folder (and the folders that are missing), which the
    /// mount shows where the path says.
    func testPutWithAPathWritesInThatFolder() throws {
        device = try MountedDevice()
        try FileManager.default.createDirectory(atPath: device.path("notebook/Projects"), withIntermediateDirectories: true)
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/Projects/Plan.md"), "old plan").errno, 0)
        let replaced = try quire(["put", "notebook", "Projects/Plan.md"], home: device.home, stdin: Array("new plan".utf8))
        XCTAssertEqual(replaced.status, 0, replaced.stderr)
        XCTAssertTrue(replaced.stdout.hasPrefix("notebook/Projects/Plan "), replaced.stdout)
        XCTAssertTrue(eventually(2) { (try? String(contentsOfFile: self.device.path("notebook/Projects/Plan.md"), encoding: .utf8)) == "new plan" })
        let made = try quire(["put", "notebook", "Projects/Q1/Deep/Idea.md"], home: device.home, stdin: Array("deep idea".utf8))
        XCTAssertEqual(made.status, 0, made.stderr)
        XCTAssertTrue(eventually(2) { (try? String(contentsOfFile: self.device.path("notebook/Projects/Q1/Deep/Idea.md"), encoding: .utf8)) == "deep idea" })
        XCTAssertEqual(try quire(["put", "notebook", "Top"], home: device.home, stdin: Array("top".utf8)).status, 0)
        let listed = try quire(["ls", "notebook"], home: device.home).stdout.split(separator: "\n").map { String($0.split(separator: " ").last ?? "") }
        XCTAssertEqual(Set(listed), ["Projects/", "Projects/Plan", "Projects/Q1/", "Projects/Q1/Deep/", "Projects/Q1/Deep/Idea", "Top"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: device.path("notebook/Projects%2FQ1%2FDeep%2FIdea.md")))
        // A folder is not a note, and a path must end in a name.
        XCTAssertEqual(try quire(["put", "notebook", "Projects/Q1"], home: device.home, stdin: Array("x".utf8)).status, 1)
        let folder = try quire(["put", "notebook", "Projects/"], home: device.home, stdin: Array("x".utf8))
        XCTAssertEqual(folder.status, 1)
        XCTAssertTrue(folder.stderr.contains("is a folder; give a note's name inside it"), folder.stderr)
        XCTAssertEqual(try quire(["put", "notebook", "Nowhere/"], home: device.home, stdin: Array("x".utf8)).status, 2, "names no note")
        XCTAssertEqual(try quire(["get", "notebook", "Projects/Q1/Deep.md"], home: device.home).status, 1, "still a folder only")
    }

    /// A program that went into a folder just made, or that was renamed
    /// around it, still has a path (`mkdir d && cd d && git init`).
    func testAProgramInAFolderJustMadeOrRenamedKeepsItsPath() throws {
        device = try MountedDevice()
        let script = """
            import os, sys, time
            root = sys.argv[1]
            for k in range(10):
                d = os.path.join(root, "made %d" % k)
                os.mkdir(d); os.chdir(d); os.getcwd()
                time.sleep(0.1)
                assert os.getcwd() == d, os.getcwd()
                os.rename(d, d + " renamed")
                time.sleep(0.1)
                assert os.getcwd() == d + " renamed", os.getcwd()
            """
        let result = shell("python3 -c '\(script)' '\(device.path("notebook"))' 2>&1")
        XCTAssertEqual(result.status, 0, result.output)
    }
}
