import Foundation
import XCTest

/// The kernel forgets inodes (here: `drop_caches`), and the mount's tables
/// shrink with it, seen through `.quire/status.json`.
final class MountForgetTests: XCTestCase {
    var device: MountedDevice!

    override func tearDown() {
        device?.close()
        device = nil
    }

    func tableSizes() throws -> [String: Int] {
        let data = Data(try device.read(".quire/status.json"))
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let mount = try XCTUnwrap(json["mount"] as? [String: Any])
        return try XCTUnwrap(mount["tables"] as? [String: Int])
    }

    func dropCaches() {
        sync()
        XCTAssertEqual(shell("echo 2 > /proc/sys/vm/drop_caches").status, 0)
    }

    func testInodeTablesShrinkWhenTheKernelForgets() throws {
        device = try MountedDevice()
        let count = 2_000
        for index in 0..<count {
            XCTAssertEqual(Syscall.writeFile(device.path("notebook/note \(index).md"), "note \(index)\n").errno, 0)
        }
        // Created files keep their entries (and so their inodes) in the kernel.
        XCTAssertGreaterThanOrEqual(try tableSizes()["inodes"] ?? 0, count)
        dropCaches()
        var sizes: [String: Int] = [:]
        XCTAssertTrue(eventually(10) { sizes = (try? self.tableSizes()) ?? [:]; return (sizes["inodes"] ?? .max) < 100 },
                      "after writing and drop_caches: \(sizes)")
        // ls -l: readdirplus hands out every entry (or lookups do).
        let listing = shell("ls -l '\(device.path("notebook"))' | wc -l")
        XCTAssertEqual(listing.status, 0)
        XCTAssertEqual(Int(listing.output.trimmingCharacters(in: .whitespacesAndNewlines)), count + 1)
        XCTAssertGreaterThanOrEqual(try tableSizes()["inodes"] ?? 0, count)

        dropCaches()
        XCTAssertTrue(eventually(10) { sizes = (try? self.tableSizes()) ?? [:]; return (sizes["inodes"] ?? .max) < 100 },
                      "after listing and drop_caches: \(sizes)")
        // A forgotten row is found again, with the same number it had.
        XCTAssertEqual(try device.text("notebook/note 7.md"), "note 7\n")
        var first = stat(), second = stat()
        XCTAssertEqual(stat(device.path("notebook/note 8.md"), &first), 0)
        dropCaches()
        XCTAssertEqual(stat(device.path("notebook/note 8.md"), &second), 0)
        XCTAssertEqual(first.st_ino, second.st_ino)
        XCTAssertEqual(Syscall.writeFile(device.path("notebook/note 8.md"), "eight\n").errno, 0)
        XCTAssertEqual(try quire(["get", "notebook", "note 8"], home: device.home).stdout, "eight\n")
    }

    /// A file held open keeps its inode through drop_caches and works after.
    func testAnOpenFileKeepsItsInodeThroughForgetting() throws {
        device = try MountedDevice { home in
            XCTAssertEqual(try quire(["put", "notebook", "Held"], home: home, stdin: Array("held\n".utf8)).status, 0)
        }
        let descriptor = open(device.path("notebook/Held.md"), O_RDWR | O_APPEND)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        dropCaches()
        usleep(300_000)
        let more = Array("more\n".utf8)
        XCTAssertEqual(more.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }, more.count)
        var info = stat()
        XCTAssertEqual(fstat(descriptor, &info), 0)
        XCTAssertEqual(info.st_size, 10)
        XCTAssertEqual(close(descriptor), 0)
        XCTAssertEqual(try quire(["get", "notebook", "Held"], home: device.home).stdout, "held\nmore\n")
    }
}
