import Foundation
import QuireCore
import QuireSync
import XCTest
@testable import QuireDaemon

/// The control channel's messages: every one survives the wire, and a line
/// that is not one is refused with a reason, never half read.
final class ControlMessageTests: XCTestCase {
    let key = RowKey(bytes: [UInt8](repeating: 0x11, count: 16))!
    let holder = DeviceID(bytes: [UInt8](repeating: 0x22, count: 16))!
    let hash = [UInt8](repeating: 0x33, count: 32)

    func roundTrip<T: Codable & Equatable>(_ value: T) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value))
    }

    func testEveryRequestAndEventRoundTrips() throws {
        let requests: [ControlRequest] = [
            .offload(keys: [key], copies: 2, timeout: 7.5),
            .recall(keys: [key, key], timeout: 1),
            .verify(items: [holder: [HoldQuery.Item(contentHash: hash, key: key), HoldQuery.Item(contentHash: hash, key: nil)]], timeout: 3),
        ]
        for request in requests { XCTAssertEqual(try roundTrip(request), request) }
        let events: [ControlEvent] = [
            .outcome(OffloadOutcome(key: key, title: "A note: ünïcode", bytes: 42, result: .failed, reason: "no homebase", holders: [holder])),
            .outcome(OffloadOutcome(key: key, title: "t", bytes: 0, result: .done)),
            .verified([holder: Set([hash]), DeviceID(bytes: [UInt8](repeating: 0x44, count: 16))!: nil]),
            .error("something went wrong"),
            .done,
        ]
        for event in events { XCTAssertEqual(try roundTrip(event), event) }
    }

    func testMalformedLinesAreRefusedWithAReason() {
        let lines = [
            #"{"op":"offload","keys":["zz"],"copies":1,"timeout":1}"#,        // not hex
            #"{"op":"explode","timeout":1}"#,                                  // unknown op
            #"{"op":"recall","keys":["11111111111111111111111111111111"]}"#,  // no timeout
            #"{"op":"verify","items":{"22222222222222222222222222222222":[{"hash":"33"}]},"timeout":1}"#,  // short hash
            "not json at all",
        ]
        for line in lines {
            XCTAssertThrowsError(try JSONDecoder().decode(ControlRequest.self, from: Data(line.utf8)), line)
        }
        XCTAssertThrowsError(try JSONDecoder().decode(ControlEvent.self, from: Data(#"{"event":"outcome","outcome":{"key":"11","title":"t","bytes":1,"result":"maybe","holders":[]}}"#.utf8)))
    }
}
