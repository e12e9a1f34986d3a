import Foundation
import QuireRelay
import QuireTestSupport
import XCTest

/// What whoever reads Redis sees while two devices sync: every frame on
/// the channels, captured with a plain PSUBSCRIBE. No device id and no
/// account id appear in clear, and frame sizes come from a few buckets.
final class RelayMetadataTests: SyncEndToEndBase {
    override var relay: String { (try? SharedTestRedis.url()) ?? "redis://127.0.0.1:1" }

    func testACaptureOfTheRedisChannelsShowsNoDeviceIdInClear() throws {
        let url = try SharedTestRedis.url()
        let hostPort = url.dropFirst("redis://".count).split(separator: ":")
        try quireOK(["init", "--name", "a", "--relay", relay], home: home("a"))
        try quireOK(["invite", "--out", dir + "/invite", "--kdf", "interactive"], home: home("a"), env: env)
        try quireOK(["init", "--join", dir + "/invite", "--name", "b", "--relay", relay], home: home("b"), env: env)
        var ids: [[UInt8]] = []
        var account: [UInt8] = []
        for n in ["a", "b"] {
            let status = try quireOK(["status", "--json"], home: home(n)).stdout
            let o = try jsonObject(status) as? [String: Any] ?? [:]
            if let device = (o["device"] as? String) ?? ((o["identity"] as? [String: Any])?["device"] as? String) { ids.append(hexBytes(device)) }
            if let acct = (o["account"] as? String) ?? ((o["identity"] as? [String: Any])?["account"] as? String) { account = hexBytes(acct) }
        }
        if ids.count < 2 {
            let list = (try jsonObject(try quireOK(["devices", "--json"], home: home("a")).stdout) as! [String: Any])["devices"] as! [[String: Any]]
            ids = list.map { hexBytes($0["device"] as! String) }
        }
        // The capture: redis-cli in raw mode, every channel, while they sync.
        let capture = Process()
        capture.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        capture.arguments = ["-h", String(hostPort[0]), "-p", String(hostPort[1]), "--no-raw", "psubscribe", "*"]
        let out = Pipe()
        capture.standardOutput = out
        try capture.run()
        usleep(300_000)
        try startAll(["a", "b"])
        try put(home("a"), ["notebook", "Seen by b"], body: "a note that travels")
        XCTAssertTrue(try waitForEqualDigests([home("a"), home("b")], timeout: 30), daemons.map(\.output).joined())
        XCTAssertTrue(eventually(20) {
            ((try? jsonObject(try quireOK(["devices", "--json"], home: self.home("a")).stdout)) as? [String: Any]).map {
                (($0["devices"] as? [[String: Any]]) ?? []).count == 2 } ?? false })
        stopAll()
        capture.terminate()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let frames = redisCLIPayloads(text)
        XCTAssertGreaterThan(frames.count, 3, "the capture saw the sync")
        XCTAssertEqual(ids.count, 2)
        for frame in frames {
            for id in ids { XCTAssertNil(frame.firstRange(of: id), "a device id in clear on the relay") }
            if !account.isEmpty { XCTAssertNil(frame.firstRange(of: Array(account.prefix(16))), "the account id in clear on the relay") }
        }
        let sizes = Set(frames.map(\.count))
        XCTAssertTrue(sizes.isSubset(of: [1024, 4096, 16384, 65536]), "frame sizes: \(sizes.sorted())")
    }
}

private func hexBytes(_ hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = hex.startIndex
    while i < hex.endIndex, let j = hex.index(i, offsetBy: 2, limitedBy: hex.endIndex) {
        if let b = UInt8(hex[i..<j], radix: 16) { out.append(b) }
        i = j
    }
    return out
}

/// The message payloads in `redis-cli --no-raw psubscribe` output, whose
/// strings are quoted with \xHH escapes: every 4th line of a pmessage.
private func redisCLIPayloads(_ text: String) -> [[UInt8]] {
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    var out: [[UInt8]] = []
    var i = 0
    while i < lines.count {
        if lines[i].hasSuffix("\"pmessage\""), i + 3 < lines.count {
            out.append(unquote(lines[i + 3]))
            i += 4
        } else {
            i += 1
        }
    }
    return out
}

private func unquote(_ line: String) -> [UInt8] {
    guard let open = line.firstIndex(of: "\""), let close = line.lastIndex(of: "\""), open < close else { return [] }
    let body = Array(line[line.index(after: open)..<close].utf8)
    var out: [UInt8] = []
    var i = 0
    while i < body.count {
        if body[i] == UInt8(ascii: "\\"), i + 1 < body.count {
            let c = body[i + 1]
            switch c {
            case UInt8(ascii: "x") where i + 3 < body.count:
                out.append(UInt8(String(decoding: body[(i + 2)...(i + 3)], as: UTF8.self), radix: 16) ?? 0); i += 4
            case UInt8(ascii: "n"): out.append(10); i += 2
            case UInt8(ascii: "r"): out.append(13); i += 2
            case UInt8(ascii: "t"): out.append(9); i += 2
            case UInt8(ascii: "a"): out.append(7); i += 2
            case UInt8(ascii: "b"): out.append(8); i += 2
            default: out.append(c); i += 2
            }
        } else {
            out.append(body[i]); i += 1
        }
    }
    return out
}
