import Foundation
import QuireCore
import QuireStore
import XCTest

/// What a restore sets aside: this device's writes that no device that
/// counts received. A revoked device is never heard again, so a write whose
/// only holder it is counts as received by none. Real replica files.
final class UnsharedWritesTests: XCTestCase {
    func testAWriteOnlyARevokedDeviceReceivedIsNamed() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try makeStore(dir)
        try store.bindDevice()
        let laptop = DeviceID(bytes: [UInt8](repeating: 0xC3, count: 16))!
        let phone = DeviceID(bytes: [UInt8](repeating: 0xD4, count: 16))!
        _ = try store.put(note("base", "base words\n"))
        try confirmHeld(store, by: laptop)
        let backup = dir + "/backup.sqlite"
        try store.backup(to: backup)
        // Written while the phone was the only sibling online.
        _ = try store.put(note("X", "reached only the phone\n"))
        try confirmHeld(store, by: phone)
        XCTAssertEqual(try store.unconfirmedWrites(), 0)
        let current = dir + "/replica.sqlite"
        XCTAssertEqual(try ReplicaStore.unsharedWrites(in: current, missingFrom: backup).map(\.name), [],
                       "held by a device that counts")
        XCTAssertEqual(try ReplicaStore.unsharedWrites(in: current, missingFrom: backup, revoked: [phone]).map(\.name), ["X"])
        // 'base' is in the backup as it is: nothing to set aside, whoever holds it.
        XCTAssertEqual(try ReplicaStore.unsharedWrites(in: current, missingFrom: backup, revoked: [phone, laptop]).map(\.name), ["X"])
        XCTAssertEqual(try ReplicaStore.unsharedWrites(in: current, missingFrom: backup, revoked: [laptop]).map(\.name), [])
    }

    /// Once this device took part in a barrier round, a holder of the
    /// round's roster is recorded for its own writes too: the phone was in
    /// the roster when it received X, and was revoked after.
    func testAWriteOnlyARevokedRosterMemberReceivedIsNamedAfterABarrierRound() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try makeStore(dir)
        try store.bindDevice()
        let laptop = DeviceID(bytes: [UInt8](repeating: 0xC3, count: 16))!
        let phone = DeviceID(bytes: [UInt8](repeating: 0xD4, count: 16))!
        try store.noteBarrierRound(roster: [deviceA, laptop, phone])
        _ = try store.put(note("base", "base words\n"))
        try confirmHeld(store, by: laptop)
        let backup = dir + "/backup.sqlite"
        try store.backup(to: backup)
        _ = try store.put(note("X", "reached only the phone\n"))
        try confirmHeld(store, by: phone)
        let current = dir + "/replica.sqlite"
        XCTAssertEqual(try ReplicaStore.unsharedWrites(in: current, missingFrom: backup, revoked: [phone]).map(\.name), ["X"])
        XCTAssertEqual(try ReplicaStore.unsharedWrites(in: current, missingFrom: backup, revoked: [laptop]).map(\.name), [])
    }
}
