import Foundation
import QuireTestSupport
import XCTest

/// phone (a device), home (a homebase) and tablet (a device that keeps
/// everything resident), made with init + invite + join on a local relay.
class OffloadFleetBase: XCTestCase {
    var dir = ""
    var daemons: [String: SyncDaemon] = [:]
    let env = ["QUIRE_PASSPHRASE": "a long shared secret"]

    override func setUp() { dir = makeShortDirectory() }

    override func tearDown() {
        for d in daemons.values { d.stop() }
        daemons = [:]
        try? FileManager.default.removeItem(atPath: dir)
    }

    var relay: String { "local:\(dir)/relay" }
    func home(_ name: String) -> String { dir + "/" + name }

    func makeFleet(_ extra: [(name: String, homebase: Bool)] = []) throws {
        try quireOK(["init", "--name", "phone", "--relay", relay], home: home("phone"))
        for (name, homebase) in [("home", true), ("tablet", false)] + extra {
            try quireOK(["invite", "--out", dir + "/invite-" + name, "--kdf", "interactive"], home: home("phone"), env: env)
            try quireOK(["init", "--join", dir + "/invite-" + name, "--name", name, "--relay", relay] + (homebase ? ["--homebase"] : []),
                        home: home(name), env: env)
        }
        let names = ["phone", "home", "tablet"] + extra.map(\.name)
        for n in names { try start(n) }
        XCTAssertTrue(try waitForEqualDigests(names.map(home), timeout: 30), daemons.values.map(\.output).joined())
    }

    func start(_ name: String, env: [String: String] = [:]) throws {
        daemons[name]?.stop()
        daemons[name] = try SyncDaemon(home: home(name), relay: relay, env: env, waitsForControlChannel: true)
    }

    func stop(_ name: String) {
        daemons[name]?.stop()
        daemons[name] = nil
    }

    func put(_ name: String, _ title: String, _ body: String) throws {
        try quireOK(["put", "notebook", title], home: home(name), stdin: Array(body.utf8))
    }

    func encodedDigest(_ name: String) throws -> String {
        let r = try quireOK(["digest", "--json"], home: home(name))
        return (try jsonObject(r.stdout) as! [String: Any])["encoded"] as! String
    }

    func offloadedTitles(_ name: String) throws -> Set<String> {
        let r = try quireOK(["ls", "notebook", "--json"], home: home(name))
        return Set((try jsonObject(r.stdout) as! [[String: Any]]).filter { $0["offloaded"] as! Bool }.map { $0["name"] as! String })
    }

    func json(_ r: RunResult) throws -> [String: Any] { try jsonObject(r.stdout) as? [String: Any] ?? [:] }

    /// Offload every note (large ones travel in chunks) through the running
    /// sync, check that nothing an observer can compare moved, recall them
    /// all byte for byte. Shared by the local-relay and Redis runs.
    func runOffloadAndRecallScenario(sizes: [Int]) throws {
        try makeFleet()
        for (i, size) in sizes.enumerated() { try put("phone", "note \(i)", Self.body(i, size: size)) }
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("home"), home("tablet")], timeout: 30))
        let before = try encodedDigest("phone")

        // Through the running sync's control channel.
        let r = try quire(["offload", "--all", "--json"], home: home("phone"))
        XCTAssertEqual(r.status, 0, r.stderr)
        let summary = try json(r)
        XCTAssertEqual(summary["offloaded"] as? Int, 4)
        XCTAssertEqual(summary["bytesFreed"] as? Int, sizes.indices.reduce(0) { $0 + Self.body($1, size: sizes[$1]).utf8.count })
        XCTAssertEqual(try offloadedTitles("phone"), ["note 0", "note 1", "note 2", "note 3"])
        XCTAssertEqual(try encodedDigest("phone"), before, "offloading is not an edit")
        usleep(1_500_000)   // a heartbeat's worth: nothing to pull, no storm
        XCTAssertEqual(try encodedDigest("tablet"), before, "a fully resident device computes the same root")
        XCTAssertEqual(try encodedDigest("home"), before)
        XCTAssertEqual(try offloadedTitles("tablet"), [], "the tablet keeps its bytes")
        let homeStatus = try json(try quireOK(["status", "--json"], home: home("home")))
        let held = ((homeStatus["offload"] as? [String: Any])?["held"] as? [[String: Any]])?.first
        XCTAssertEqual(held?["count"] as? Int, 4)
        XCTAssertEqual(held?["name"] as? String, "'phone'")
        let text = try quireOK(["status"], home: home("home")).stdout
        XCTAssertTrue(text.contains("homebase: holds 4 bodies for other devices: 'phone' 4"), text)
        XCTAssertTrue(try quireOK(["status"], home: home("phone")).stdout.contains("4 notes offloaded"))
        XCTAssertTrue(try quireOK(["fsck"], home: home("phone")).stdout.contains("4 checked, 4 held"))
        let get = try quire(["get", "notebook", "note 2"], home: home("phone"))
        XCTAssertEqual(get.status, 1)
        XCTAssertTrue(get.stderr.contains("offloaded"), get.stderr)

        let back = try quire(["recall", "--all", "--json"], home: home("phone"))
        XCTAssertEqual(back.status, 0, back.stderr)
        XCTAssertEqual(try json(back)["recalled"] as? Int, 4)
        XCTAssertEqual(try encodedDigest("phone"), before, "recall is not an edit either")
        for (i, size) in sizes.enumerated() {
            XCTAssertEqual(try quireOK(["get", "notebook", "note \(i)"], home: home("phone")).stdout, Self.body(i, size: size))
        }
        // Repeating both is harmless.
        try quireOK(["offload", "note 2"], home: home("phone"))
        try quireOK(["offload", "note 2"], home: home("phone"))
        XCTAssertEqual(try encodedDigest("phone"), before)
    }

    static func body(_ seed: Int, size: Int) -> String {
        var out = ""
        var i = 0
        while out.utf8.count < size { out += "Paragraph \(i) of note \(seed): words that matter.\n\n"; i += 1 }
        return out
    }
}

final class OffloadEndToEndTests: OffloadFleetBase {
    func testOffloadAndRecallLeaveTheDigestBitIdenticalAndResidentDevicesAgree() throws {
        try runOffloadAndRecallScenario(sizes: [10, 5_000, 100_000, 300_000])   // 64 KiB datagrams: the large ones in chunks
    }

    func testPointersNamingDifferentHoldersAgreeAndOtherContentDiverges() throws {
        try makeFleet([("attic", true)])
        try put("phone", "shared", Self.body(1, size: 20_000))
        try put("phone", "edited later", Self.body(2, size: 20_000))
        let all = ["phone", "home", "tablet", "attic"].map(home)
        XCTAssertTrue(try waitForEqualDigests(all, timeout: 30))
        // The phone's copy goes to the attic only, the tablet's to home only.
        stop("home")
        let p = try json(try quireOK(["offload", "shared", "--json"], home: home("phone")))
        XCTAssertEqual(((p["notes"] as? [[String: Any]])?.first?["holders"] as? [String])?.count, 1)
        try start("home")
        stop("attic")
        try quireOK(["offload", "shared", "--timeout", "5"], home: home("tablet"))
        try start("attic")
        XCTAssertEqual(try offloadedTitles("phone"), ["shared"])
        XCTAssertEqual(try offloadedTitles("tablet"), ["shared"])
        XCTAssertTrue(try waitForEqualDigests(all, timeout: 20), "two pointers naming different holders agree")

        // A pointer to other content: the phone offloads a note the tablet
        // changes while apart; the roots differ until the edit arrives, which
        // arrives resident here as usual.
        try quireOK(["offload", "edited later"], home: home("phone"))
        stop("tablet")
        try put("tablet", "edited later", "A new body written on the tablet.\n")
        XCTAssertNotEqual(try digestRoots(home("tablet"))["notebook"], try digestRoots(home("phone"))["notebook"])
        try start("tablet")
        XCTAssertTrue(try waitForEqualDigests(all, timeout: 30))
        XCTAssertEqual(try quireOK(["get", "notebook", "edited later"], home: home("phone")).stdout, "A new body written on the tablet.\n")
        XCTAssertEqual(try offloadedTitles("phone"), ["shared"])
    }

    func testHomebaseOfflineClearsNothingAndSaysSo() throws {
        try makeFleet()
        try put("phone", "big", Self.body(1, size: 50_000))
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("home")], timeout: 30))
        stop("home")
        stop("phone")   // the command runs its own engine this time
        let started = Date()
        let r = try quire(["offload", "--all", "--timeout", "2"], home: home("phone"))
        XCTAssertEqual(r.status, 1)
        XCTAssertLessThan(Date().timeIntervalSince(started), 8)
        XCTAssertTrue(r.stderr.contains("not offloaded: 'big'"), r.stderr)
        XCTAssertTrue(r.stderr.contains("'home' did not answer"), r.stderr)
        XCTAssertTrue(r.stderr.contains("the body stays resident"), r.stderr)
        XCTAssertEqual(try offloadedTitles("phone"), [])
        XCTAssertEqual(try quireOK(["get", "notebook", "big"], home: home("phone")).stdout, Self.body(1, size: 50_000))
    }

    func testHomebaseCrashingBeforeItCommitsSendsNoAck() throws {
        try makeFleet()
        try put("phone", "precious", Self.body(3, size: 80_000))
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("home")], timeout: 30))
        try start("home", env: ["QUIRE_TEST_CRASH_BEFORE_HOLD": "1"])
        let r = try quire(["offload", "precious", "--timeout", "3"], home: home("phone"))
        XCTAssertEqual(r.status, 1, r.stdout)
        XCTAssertTrue(r.stderr.contains("not offloaded: 'precious'"), r.stderr)
        let crashed = daemons["home"]!
        XCTAssertTrue(eventually(5) { !crashed.isRunning })
        XCTAssertEqual(crashed.terminationStatus, 75, crashed.output)
        XCTAssertEqual(try offloadedTitles("phone"), [], "no ack, so the body stays resident")
        let homeStatus = try json(try quireOK(["status", "--json"], home: home("home")))
        XCTAssertNil((homeStatus["offload"] as? [String: Any])?["held"], "nothing was committed on the homebase")
        // Restarted without the fault, the same offload goes through.
        try start("home")
        try quireOK(["offload", "precious"], home: home("phone"))
        XCTAssertEqual(try offloadedTitles("phone"), ["precious"])
    }

    func testWrongBytesFromAHolderAreRejectedReportedAndAnotherHolderAsked() throws {
        try makeFleet()
        try put("phone", "n", Self.body(4, size: 30_000))
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("home"), home("tablet")], timeout: 30))
        try quireOK(["offload", "n"], home: home("phone"))
        try start("home", env: ["QUIRE_TEST_CORRUPT_RECALL": "1"])
        let r = try quire(["recall", "n"], home: home("phone"))
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("'home' answered the recall of 'n' with wrong bytes"), r.stderr)
        XCTAssertEqual(try quireOK(["get", "notebook", "n"], home: home("phone")).stdout, Self.body(4, size: 30_000),
                       "the body came from the tablet, which holds it resident")
        // With the tablet gone there is no one else: not recalled, said why, still offloaded.
        try quireOK(["offload", "n"], home: home("phone"))
        stop("tablet")
        let failed = try quire(["recall", "n", "--timeout", "2"], home: home("phone"))
        XCTAssertEqual(failed.status, 1)
        XCTAssertTrue(failed.stderr.contains("not recalled: 'n'"), failed.stderr)
        XCTAssertTrue(failed.stderr.contains("wrong bytes"), failed.stderr)
        XCTAssertEqual(try offloadedTitles("phone"), ["n"])
        let fsck = try quire(["fsck", "--json"], home: home("phone"))
        XCTAssertEqual(fsck.status, 0, "the homebase still holds the right bytes: \(fsck.stdout)")
    }

    func testAnEditWhileTheOffloadIsInFlightKeepsTheNewBody() throws {
        try makeFleet()
        try put("phone", "draft", Self.body(5, size: 40_000))
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("home")], timeout: 30))
        try start("home", env: ["QUIRE_TEST_HOLD_DELAY_MS": "2000"])
        let offload = Process()
        offload.executableURL = URL(fileURLWithPath: QuireBinary.path)
        offload.arguments = ["--home", home("phone"), "offload", "draft", "--timeout", "10"]
        let errors = Pipe()
        offload.standardError = errors
        offload.standardOutput = FileHandle.nullDevice
        try offload.run()
        usleep(800_000)
        try put("phone", "draft", "Rewritten while the offload was in flight.\n")
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        offload.waitUntilExit()
        XCTAssertEqual(offload.terminationStatus, 1, stderr)
        XCTAssertTrue(stderr.contains("changed while its offload was in flight"), stderr)
        XCTAssertEqual(try offloadedTitles("phone"), [])
        XCTAssertEqual(try quireOK(["get", "notebook", "draft"], home: home("phone")).stdout, "Rewritten while the offload was in flight.\n")
    }

    func testCopiesAndRoles() throws {
        try makeFleet()
        try put("phone", "twice", Self.body(6, size: 10_000))
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("home"), home("tablet")], timeout: 30))
        let r = try json(try quireOK(["offload", "twice", "--copies", "2", "--json"], home: home("phone")))
        XCTAssertEqual(((r["notes"] as? [[String: Any]])?.first?["holders"] as? [String])?.count, 2, "the homebase and the resident tablet")
        try put("phone", "thrice", Self.body(7, size: 10_000))
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("tablet")], timeout: 30))
        let three = try quire(["offload", "--all", "--copies", "3", "--timeout", "2"], home: home("phone"))
        XCTAssertEqual(three.status, 1)
        XCTAssertTrue(three.stderr.contains("only 2 of 3 required copies"), three.stderr)
        XCTAssertEqual(try offloadedTitles("phone"), ["twice"])
        stop("tablet")
        let fsck = try quire(["fsck", "--timeout", "2"], home: home("phone"))
        XCTAssertEqual(fsck.status, 1)
        XCTAssertTrue(fsck.stdout.contains("held by 1 of 2 required copies"), fsck.stdout + fsck.stderr)
        XCTAssertTrue(fsck.stdout.contains("'tablet' did not answer"), fsck.stdout)
        // A homebase never offloads; a device with offloaded notes cannot become one.
        let refused = try quire(["offload", "--all"], home: home("home"))
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("homebase"), refused.stderr)
        XCTAssertEqual(try quire(["role", "homebase"], home: home("phone")).status, 1)
        XCTAssertEqual(try quireOK(["role"], home: home("tablet")).stdout, "device\n")
        try quireOK(["role", "homebase"], home: home("tablet"))
        let devices = try quireOK(["devices", "--json"], home: home("tablet")).stdout
        XCTAssertTrue(devices.contains("\"role\" : \"homebase\""), devices)
    }
}

/// A device that joins once every other device offloaded a note receives
/// it offloaded, with no holder recorded: fsck asks the homebase, and
/// records what it says.
final class JoinedAfterOffloadEndToEndTests: OffloadFleetBase {
    /// A homebase whose prefs say "device" (put back from a backup made
    /// before it became one) shows and keeps the role its siblings know.
    func testTheRoleShownIsTheOneTheDeviceLogGives() throws {
        try makeFleet()
        stop("home")
        let prefsPath = home("home") + "/prefs.json"
        var prefs = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: prefsPath))) as? [String: Any])
        XCTAssertEqual(prefs["role"] as? String, "homebase")
        prefs["role"] = "device"
        try JSONSerialization.data(withJSONObject: prefs).write(to: URL(fileURLWithPath: prefsPath))
        XCTAssertTrue(try quireOK(["status"], home: home("home")).stdout.contains("role homebase"), "status reads the device log too")
        XCTAssertTrue(try quire(["offload", "--all"], home: home("home")).stderr.contains("this device is a homebase"))
        XCTAssertEqual(try quireOK(["role"], home: home("home")).stdout, "homebase\n")
        let after = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: prefsPath))) as? [String: Any])
        XCTAssertEqual(after["role"] as? String, "homebase", "prefs follow the device log")
    }

    func testADeviceJoinedAfterAnOffloadFindsTheHolderWithFsck() throws {
        try makeFleet()
        try put("phone", "old note", Self.body(10, size: 10_000))
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("home"), home("tablet")], timeout: 30))
        try quireOK(["offload", "--all"], home: home("phone"))
        try quireOK(["offload", "--all"], home: home("tablet"))
        // The homebase away while it joins: the note comes from a device that offloaded it.
        stop("home")
        try quireOK(["invite", "--out", dir + "/invite-late", "--kdf", "interactive"], home: home("phone"), env: env)
        try quireOK(["init", "--join", dir + "/invite-late", "--name", "late", "--relay", relay], home: home("late"), env: env)
        try start("late")
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("late")], timeout: 30))
        XCTAssertEqual(try offloadedTitles("late"), ["old note"], "it came offloaded")
        try start("home")
        XCTAssertTrue(try quireOK(["status"], home: home("late")).stdout.contains("no device recorded here (1"))

        let fsck = try quire(["fsck", "--timeout", "5"], home: home("late"))
        XCTAssertEqual(fsck.status, 0, fsck.stdout + fsck.stderr)
        let status = try quireOK(["status"], home: home("late")).stdout
        XCTAssertTrue(status.contains("held by 'home' (1)"), status)
        stop("home")
        let away = try quire(["fsck", "--timeout", "2"], home: home("late"))
        XCTAssertEqual(away.status, 1)
        XCTAssertTrue(away.stdout.contains("'home' did not answer"), away.stdout)
    }
}

/// A holder revoked after an offload counted its copy: said apart from an
/// unreachable one, never asked, and its notes brought back on request.
final class RevokedHolderEndToEndTests: OffloadFleetBase {
    func testARevokedHoldersCopyCountsNoMoreAndItsNotesComeBack() throws {
        try makeFleet()
        try put("phone", "twice", Self.body(6, size: 10_000))
        try put("phone", "once", Self.body(7, size: 10_000))
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("home"), home("tablet")], timeout: 30))
        let twice = try json(try quireOK(["offload", "twice", "--copies", "2", "--json"], home: home("phone")))
        XCTAssertEqual(((twice["notes"] as? [[String: Any]])?.first?["holders"] as? [String])?.count, 2, "the homebase and the resident tablet")
        try quireOK(["offload", "once"], home: home("phone"))
        XCTAssertEqual(try offloadedTitles("phone"), ["twice", "once"])
        // Nothing to mend yet.
        XCTAssertEqual(try quireOK(["recall", "--below-copies"], home: home("phone")).stdout,
                       "no offloaded note is below its copies for a revocation: nothing to recall\n")

        stop("tablet")
        try quireOK(["devices", "revoke", "tablet"], home: home("phone"))
        let status = try quireOK(["status"], home: home("phone")).stdout
        XCTAssertTrue(status.contains("holder 'tablet' REVOKED: 1 offloaded note counted a copy there"), status)
        XCTAssertTrue(status.contains("1 is now below the copies it was offloaded with: 'quire recall --below-copies'"), status)
        XCTAssertFalse(status.contains("holder 'tablet' UNREACHABLE"), "a revoked holder is not away, it is gone: \(status)")
        let offload = try json(try quireOK(["status", "--json"], home: home("phone")))["offload"] as? [String: Any]
        XCTAssertEqual(offload?["belowRequiredCopies"] as? Int, 1)
        XCTAssertEqual((offload?["revokedHolders"] as? [[String: Any]])?.first?["name"] as? String, "'tablet'")

        let fsck = try quire(["fsck", "--timeout", "2"], home: home("phone"))
        XCTAssertEqual(fsck.status, 1)
        XCTAssertTrue(fsck.stdout.contains("'twice'") && fsck.stdout.contains("held by 1 of 2 required copies"), fsck.stdout)
        XCTAssertTrue(fsck.stdout.contains("'tablet' was revoked (a copy there counts no more)"), fsck.stdout)
        XCTAssertFalse(fsck.stdout.contains("'tablet' did not answer"), "a revoked holder is not asked: \(fsck.stdout)")
        XCTAssertTrue(fsck.stdout.contains("'quire recall --below-copies' brings it back here"), fsck.stdout)
        XCTAssertFalse(fsck.stdout.contains("'once'"), "a note whose copies never counted the tablet is whole: \(fsck.stdout)")

        let back = try json(try quireOK(["recall", "--below-copies", "--json"], home: home("phone")))
        XCTAssertEqual(back["recalled"] as? Int, 1)
        XCTAssertEqual(try offloadedTitles("phone"), ["once"], "only the note left short came back")
        XCTAssertEqual(try quireOK(["get", "notebook", "twice"], home: home("phone")).stdout, Self.body(6, size: 10_000))
        XCTAssertEqual(try quire(["fsck", "--timeout", "5"], home: home("phone")).status, 0)
        let after = try quireOK(["status"], home: home("phone")).stdout
        XCTAssertFalse(after.contains("REVOKED"), after)
        XCTAssertEqual(try quire(["recall", "--all", "--below-copies"], home: home("phone")).status, 2, "a usage error")
    }

    /// Revoking the only holder of offloaded bodies would lose them for
    /// good (nothing it sends counts afterwards): refused, saying how to
    /// bring them back, unless --force.
    func testRevokingTheOnlyHolderOfBodiesIsRefusedUntilTheyAreRecalled() throws {
        try makeFleet()
        try put("phone", "kept", Self.body(8, size: 10_000))
        try put("phone", "given up", Self.body(9, size: 10_000))
        XCTAssertTrue(try waitForEqualDigests([home("phone"), home("home"), home("tablet")], timeout: 30))
        try quireOK(["offload", "--all"], home: home("phone"))
        XCTAssertEqual(try offloadedTitles("phone"), ["kept", "given up"])
        let refused = try quire(["devices", "revoke", "home"], home: home("phone"))
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("'home' holds the only copy this device knows of 2 offloaded note bodies"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("'quire recall --all'"), refused.stderr)
        XCTAssertFalse(try quireOK(["devices"], home: home("phone")).stdout.contains("REVOKED"), "nothing was written")

        try quireOK(["recall", "kept"], home: home("phone"))
        XCTAssertTrue(try quire(["devices", "revoke", "home"], home: home("phone")).stderr.contains("of 1 offloaded note body"))
        let forced = try quireOK(["devices", "revoke", "home", "--force"], home: home("phone"))
        XCTAssertTrue(forced.stdout.contains("1 offloaded note body it alone held cannot be recalled any more"), forced.stdout)
        XCTAssertEqual(try quireOK(["get", "notebook", "kept"], home: home("phone")).stdout, Self.body(8, size: 10_000))
    }
}

/// The same fleet on a real redis-server: offload frames, chunked bodies
/// and recalls cross Redis pub/sub instead of local datagrams.
final class OffloadRedisEndToEndTests: OffloadFleetBase {
    override var relay: String { (try? SharedTestRedis.url()) ?? "redis://127.0.0.1:1" }

    func testOffloadAndRecallOverRedis() throws {
        _ = try SharedTestRedis.url()   // fails the test with the reason when Redis is missing
        try runOffloadAndRecallScenario(sizes: [10, 5_000, 300_000, 2_500_000])   // 1 MiB messages: the last in chunks
        XCTAssertTrue(try quireOK(["status"], home: home("home")).stdout.contains("redis://"), "status names the relay")
    }
}
