import Foundation
import Glibc
import Synchronization
import QuireCore
@testable import QuireFS
import QuireStore
import XCTest

/// Offloaded notes through the mount, driven directly (no mount).
final class OffloadedNoteMountTests: XCTestCase {
    /// An offloaded version beside a concurrent one made elsewhere: the
    /// note reads as offloaded until recalled, and once the recall stored
    /// the body the file shows the union, not the recalled version alone
    /// (which would drop the other version's words at the next save).
    func testAnOffloadedVersionBesideAnotherOpensAsTheirUnion() throws {
        let body = "field notes\n"
        let seeded = Mutex<ReplicaStore?>(nil)
        let mount = try DirectMount({ store in
            let row = try store.putNote("Field", body)
            guard case .note(let note)? = row.content else { return XCTFail("not a note") }
            try store.markOffloaded(row.key, contentHash: note.contentHash, holders: [DeviceID(bytes: [UInt8](repeating: 7, count: 16))!])
            // Written elsewhere without seeing ours; its actor sorts first, so the pointer is the second head.
            let other = Actor(device: DeviceID(bytes: [UInt8](repeating: 0, count: 16))!, incarnation: 1)
            let theirs = Note(title: "Field", body: Array("other words\n".utf8), createdAt: note.createdAt, updatedAt: note.updatedAt)
            try store.apply([Row.single(.notebook, row.key, dot: Dot(actor: other, counter: 1), context: VersionVector(), content: .note(theirs))])
            seeded.withLock { $0 = store }
        }, recall: { key, hash, _ in
            // As the daemon's hook does: the engine stores the body, then hands it back.
            try seeded.withLock { $0 }?.restoreBody(Array(body.utf8), contentHash: hash, key: key)
            return Array(body.utf8)
        })
        let key = try XCTUnwrap(mount.store.summaries(.notebook).first).key
        let heads = try XCTUnwrap(mount.store.row(.notebook, key)).heads
        XCTAssertEqual(heads.count, 2)
        if case .note(let first) = heads[0].content { XCTAssertNotNil(first.body, "the offloaded version is the second head") }
        let file = try mount.open("notebook/Field.md", O_RDWR)
        let text = try mount.read(file)
        XCTAssertTrue(text.contains("field notes") && text.contains("other words"), text)
        try mount.close(file)
    }
}
