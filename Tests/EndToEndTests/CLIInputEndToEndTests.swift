import Foundation
import QuireCore
import XCTest

/// What the command line reads and how it answers a name it cannot find,
/// with the real `quire` binary.
final class CLIInputEndToEndTests: XCTestCase {
    var dir = ""
    let limit = RowLimits.maxBodyBytes

    override func setUp() { dir = makeShortDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func home(_ name: String) -> String { dir + "/" + name }

    /// `--file` may be a pipe (`<(...)`, a FIFO, /dev/stdin), whose size
    /// says nothing; what cannot be read is named with the reason.
    func testPutReadsAFileThatIsAPipeAndNamesWhatItCannotRead() throws {
        try quireOK(["init", "--name", "a"], home: home("a"))
        let fifo = dir + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let piped = shell("printf 'from a pipe\\n' > '\(fifo)' & '\(QuireBinary.path)' --home '\(home("a"))' put notebook Piped --file '\(fifo)'; echo \"exit $?\"")
        XCTAssertTrue(piped.output.hasSuffix("exit 0\n"), piped.output)
        XCTAssertEqual(try quire(["get", "notebook", "Piped"], home: home("a")).stdout, "from a pipe\n")
        let stdin = shell("echo typed | '\(QuireBinary.path)' --home '\(home("a"))' put saga 2026-01-03 --file /dev/stdin; echo \"exit $?\"")
        XCTAssertTrue(stdin.output.hasSuffix("exit 0\n"), stdin.output)
        XCTAssertEqual(try quire(["get", "saga", "2026-01-03"], home: home("a")).stdout, "typed\n")
        // A day that cannot be, or that holds nothing, is said so (not as a key).
        for command in ["get", "history", "rm"] {
            let impossible = try quire([command, "saga", "2026-02-30"], home: home("a"))
            XCTAssertEqual(impossible.status, 2, command)
            XCTAssertTrue(impossible.stderr.hasPrefix("quire: a journal day is YYYY-MM-DD, not '2026-02-30'\n"), impossible.stderr)
            let empty = try quire([command, "saga", "1999-01-01"], home: home("a"))
            XCTAssertEqual(empty.status, 1, command)
            XCTAssertEqual(empty.stderr, "quire: no saga row named '1999-01-01'\n", command)
        }
        // A pipe over the limit is refused after reading one byte past it.
        let big = shell("head -c \(limit + 4096) /dev/zero > '\(fifo)' & '\(QuireBinary.path)' --home '\(home("a"))' put notebook Big --file '\(fifo)'; echo \"exit $?\"")
        XCTAssertTrue(big.output.contains("notebook/Big not written: its text is over the 16 MiB limit"), big.output)
        XCTAssertTrue(big.output.hasSuffix("exit 1\n"), big.output)
        let missing = try quire(["put", "notebook", "None", "--file", dir + "/missing.txt"], home: home("a"))
        XCTAssertEqual(missing.status, 1)
        XCTAssertEqual(missing.stderr, "quire: cannot read \(dir)/missing.txt: No such file or directory\n")
        let folder = try quire(["put", "notebook", "None", "--file", dir], home: home("a"))
        XCTAssertEqual(folder.stderr, "quire: cannot read \(dir): it is a folder\n")
        let backup = try quire(["restore", "--from", dir + "/missing.qbackup"], home: home("b"))
        XCTAssertEqual(backup.stderr, "quire: cannot read backup file \(dir)/missing.qbackup: No such file or directory\n")
        XCTAssertEqual(try quire(["ls", "notebook"], home: home("a")).stdout.split(separator: "\n").count, 1)
    }

    /// `quire put contacts NAME --file` reads a card as the mount does: one
    /// with no VERSION line is refused in one line, and nothing is written.
    func testPutRefusesACardWithoutAVersion() throws {
        try quireOK(["init", "--name", "a"], home: home("a"))
        let file = dir + "/nover.vcf"
        try "BEGIN:VCARD\nFN:NoVer\nEMAIL:n@x\nEND:VCARD\n".write(toFile: file, atomically: true, encoding: .utf8)
        let refused = try quire(["put", "contacts", "NoVer", "--file", file], home: home("a"))
        XCTAssertEqual(refused.status, 1)
        XCTAssertEqual(refused.stderr, "quire: contacts/NoVer not written: \(file) has no VERSION line; quire reads vCard 4.0 and 3.0 "
                       + "(add VERSION:4.0 or VERSION:3.0 after BEGIN:VCARD)\n")
        XCTAssertEqual(try quire(["get", "contacts", "NoVer"], home: home("a")).status, 1, "nothing was written")
    }

    /// Rows by the names the mount shows them under: a day's file, a
    /// setting's, a folder as ls prints it, a title in another Unicode
    /// form; ls sizes every row as its file; rm refuses a folder that
    /// holds notes, as rmdir does.
    func testRowsAreFoundByTheirFileNamesAndListedWithTheirSizes() throws {
        try quireOK(["init", "--name", "a"], home: home("a"))
        try quireOK(["put", "saga", "2026-12-06.md"], home: home("a"), stdin: Array("a day\n".utf8))
        XCTAssertEqual(try quireOK(["get", "saga", "2026-12-06.md"], home: home("a")).stdout, "a day\n")
        XCTAssertEqual(try quireOK(["get", "saga", "2026-12-06"], home: home("a")).stdout, "a day\n")
        try quireOK(["put", "settings", "theme", "dark"], home: home("a"))
        XCTAssertEqual(try quire(["get", "settings", "theme.txt"], home: home("a")).status, 0)

        try quireOK(["put", "plans", "Ship", "--due", "2026-12-24"], home: home("a"))
        let plan = try quireOK(["get", "plans", "Ship", "--json"], home: home("a"))
        let listed = try jsonObject(quireOK(["ls", "plans", "--json"], home: home("a")).stdout) as! [[String: Any]]
        XCTAssertGreaterThan(listed.first?["size"] as? Int ?? 0, 100, "a VTODO's file size, not 0: \(plan.stdout)")

        let nfd = "Nai\u{0308}ve"
        try quireOK(["put", "notebook", nfd], home: home("a"), stdin: Array("decomposed\n".utf8))
        XCTAssertEqual(try quireOK(["get", "notebook", "Na\u{00EF}ve.md"], home: home("a")).stdout, "decomposed\n")

        try quireOK(["put", "notebook", "Proj/Plan.md"], home: home("a"), stdin: Array("plan\n".utf8))
        XCTAssertEqual(try quireOK(["get", "notebook", "Proj/"], home: home("a")).stdout, "Proj/Plan\n", "a folder lists what it holds")
        let refused = try quire(["rm", "notebook", "Proj/"], home: home("a"))
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("notebook/Proj/ is a folder holding 1 note or folder"), refused.stderr)
        XCTAssertEqual(try quireOK(["get", "notebook", "Proj/Plan.md"], home: home("a")).stdout, "plan\n", "nothing moved")
        try quireOK(["rm", "notebook", "Proj/Plan.md"], home: home("a"))
        try quireOK(["rm", "notebook", "Proj/"], home: home("a"))
        XCTAssertFalse(try quireOK(["ls", "notebook"], home: home("a")).stdout.contains("Proj"))
    }

    /// `put` with a file name as the mounted folder shows it (copied from
    /// `ls`) writes the row that file shows, and a new row gets the title
    /// the name shows: no second row whose file is `X.ics.ics`.
    func testPutByTheFileNameTheFolderShowsWritesThatRow() throws {
        try quireOK(["init", "--name", "a"], home: home("a"))
        try quireOK(["put", "notebook", "Ideas"], home: home("a"), stdin: Array("first\n".utf8))
        try quireOK(["put", "notebook", "Ideas.md"], home: home("a"), stdin: Array("second\n".utf8))
        try quireOK(["put", "plans", "abc@host", "--summary", "real plan"], home: home("a"))
        try quireOK(["put", "plans", "abc@host.ics", "--done"], home: home("a"))
        try quireOK(["put", "contacts", "u7", "--email", "old@example.org"], home: home("a"))
        try quireOK(["put", "contacts", "u7.vcf", "--email", "real@example.org"], home: home("a"))
        try quireOK(["put", "contacts", "Grace.vcf", "--email", "grace@example.org"], home: home("a"))
        for (ns, titles) in [("notebook", ["Ideas"]), ("plans", ["abc@host"]), ("contacts", ["Grace", "u7"])] {
            let listed = try jsonObject(quireOK(["ls", ns, "--json"], home: home("a")).stdout) as! [[String: Any]]
            XCTAssertEqual(listed.compactMap { $0["name"] as? String }.sorted(), titles, ns)
        }
        XCTAssertEqual(try quireOK(["get", "notebook", "Ideas"], home: home("a")).stdout, "second\n")
        let plan = try quireOK(["get", "plans", "abc@host"], home: home("a")).stdout
        XCTAssertTrue(plan.contains("done: yes") && plan.contains("summary: real plan"), plan)
        let card = try quireOK(["get", "contacts", "u7.vcf"], home: home("a")).stdout
        XCTAssertTrue(card.contains("real@example.org") && !card.contains("old@example.org"), card)
    }

    /// A name that misses only by case, an extension or the folders before
    /// it is offered; nothing is offered for a name nothing is near.
    func testARowNotFoundOffersTheNameMeantByCaseOrExtension() throws {
        try quireOK(["init", "--name", "a"], home: home("a"))
        try quireOK(["put", "notebook", "Shopping List"], home: home("a"), stdin: Array("milk\n".utf8))
        try quireOK(["put", "contacts", "Ada", "--email", "ada@example.org"], home: home("a"))
        let wrongCase = try quire(["get", "notebook", "shopping list"], home: home("a"))
        XCTAssertEqual(wrongCase.status, 1)
        XCTAssertEqual(wrongCase.stderr, "quire: no notebook row named 'shopping list' (did you mean 'Shopping List'?)\n")
        let asFile = try quire(["rm", "notebook", "notebook/Shopping List.md"], home: home("a"))
        XCTAssertEqual(asFile.stderr, "quire: no notebook row named 'notebook/Shopping List.md' (did you mean 'Shopping List'?)\n")
        XCTAssertEqual(try quire(["get", "contacts", "ada.vcf"], home: home("a")).stderr,
                       "quire: no contacts row named 'ada.vcf' (did you mean 'Ada'?)\n")
        XCTAssertEqual(try quire(["get", "notebook", "Groceries"], home: home("a")).stderr, "quire: no notebook row named 'Groceries'\n")
        // Nothing was deleted by the miss.
        XCTAssertEqual(try quire(["get", "notebook", "Shopping List"], home: home("a")).stdout, "milk\n")
    }

    /// A restore killed half way (its marker written, the device's files
    /// moved aside, the backup's not yet written): every command says so
    /// and how to finish, `init` makes no new device over it, and running
    /// the restore again finishes it. Two restores within one second do not
    /// collide on the folder they move the files to.
    func testAnInterruptedRestoreIsFinishedByRunningItAgain() throws {
        let a = home("a")
        try quireOK(["init", "--name", "a"], home: a)
        try quireOK(["put", "notebook", "Kept"], home: a, stdin: Array("kept words\n".utf8))
        let backup = dir + "/a.qbackup"
        try quireOK(["backup", "--to", backup], home: a)
        let aside = a + "/before-restore-interrupted"
        try FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: false)
        try Array("\(aside)\n\(backup)\n".utf8).withUnsafeBufferPointer { try Data(buffer: $0).write(to: URL(fileURLWithPath: a + "/restore-in-progress")) }
        for name in ["replica.sqlite", "replica.sqlite-wal", "replica.sqlite-shm", "prefs.json", "keys"]
        where FileManager.default.fileExists(atPath: a + "/" + name) {
            try FileManager.default.moveItem(atPath: a + "/" + name, toPath: aside + "/" + name)
        }
        for args in [["status"], ["get", "notebook", "Kept"], ["init", "--name", "b"]] {
            let refused = try quire(args, home: a)
            XCTAssertEqual(refused.status, 1, args.joined(separator: " "))
            XCTAssertTrue(refused.stderr.contains("a restore into \(a) was interrupted (the files from before it are in \(aside)/)"), refused.stderr)
            XCTAssertTrue(refused.stderr.contains("run 'quire restore --from \(backup)' again"), refused.stderr)
        }
        try quireOK(["restore", "--from", backup], home: a)
        XCTAssertFalse(FileManager.default.fileExists(atPath: a + "/restore-in-progress"))
        XCTAssertEqual(try quireOK(["get", "notebook", "Kept"], home: a).stdout, "kept words\n")
        try quireOK(["restore", "--from", backup], home: a)
        try quireOK(["restore", "--from", backup], home: a)
        XCTAssertEqual(try quireOK(["get", "notebook", "Kept"], home: a).stdout, "kept words\n")
    }

    /// The password in a Redis relay URL is kept in prefs, never printed.
    func testConfigNeverPrintsTheRelayPassword() throws {
        try quireOK(["init", "--name", "a", "--relay", "redis://:s3cret-pass@127.0.0.1:6379"], home: home("a"))
        for output in [try quireOK(["config"], home: home("a")).stdout, try quireOK(["config", "--json"], home: home("a")).stdout] {
            XCTAssertFalse(output.contains("s3cret-pass"), output)
            XCTAssertTrue(output.contains("redis://***@127.0.0.1:6379"), output)
        }
    }
}
