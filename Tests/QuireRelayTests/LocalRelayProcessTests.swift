import Foundation
import QuireRelay
import XCTest

/// LocalRelay across processes: the test binary runs itself as the listener.
final class LocalRelayProcessTests: XCTestCase {
    static let helperVariable = "QUIRE_RELAY_TEST_LISTENER"

    /// In the child: listen until killed, writing the first frame to a file.
    /// In a normal run there is no child role, so it is skipped.
    func testHelperListenerInChildProcess() throws {
        guard let role = ProcessInfo.processInfo.environment[Self.helperVariable] else {
            throw XCTSkip("runs only as the child process of testListenerInAnotherProcessReceivesAndDeathLeavesNoTrouble")
        }
        let parts = role.split(separator: "|").map(String.init)
        let (directory, channel, output) = (parts[0], parts[1], parts[2])
        let relay = try LocalRelay(directory: directory)
        let subscription = try relay.subscribe(channel) { frame in
            try? Data(frame).write(to: URL(fileURLWithPath: output + ".part"))
            rename(output + ".part", output)
        }
        // Wait to be killed; never clean up, like a crashed device.
        sleep(30)
        XCTFail("the parent test never killed this listener")
        _ = subscription
    }

    func testListenerInAnotherProcessReceivesAndDeathLeavesNoTrouble() throws {
        let directory = try makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        let channel = "other-process"
        let output = directory + "/received.bin"
        let channelDirectory = directory + "/relay/" + channel

        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        child.arguments = ["QuireRelayTests.LocalRelayProcessTests/testHelperListenerInChildProcess"]
        var environment = ProcessInfo.processInfo.environment
        environment[Self.helperVariable] = "\(directory)/relay|\(channel)|\(output)"
        child.environment = environment
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        defer { if child.isRunning { kill(child.processIdentifier, SIGKILL); child.waitUntilExit() } }

        // The child is listening once its socket file exists.
        func socketFiles() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: channelDirectory)) ?? []).filter { $0.hasSuffix(".sock") }
        }
        let deadline = Date().addingTimeInterval(20)
        while socketFiles().isEmpty && Date() < deadline && child.isRunning { usleep(10_000) }
        XCTAssertEqual(socketFiles().count, 1, "the child never started listening")

        let relay = try LocalRelay(directory: directory + "/relay")
        defer { relay.close() }
        let frame = patternBytes(count: relay.maxFrameSize, seed: 42)
        try relay.publish(frame, to: channel)
        let received = waitForFile(output, timeout: 10)
        XCTAssertEqual(received.map { [UInt8]($0) }, frame, "the other process did not receive the frame byte-exact")

        // Kill it: its socket file stays behind, stale.
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        XCTAssertEqual(socketFiles().count, 1, "expected the killed listener's file to be left behind")
        XCTAssertNoThrow(try relay.publish([1], to: channel))
        XCTAssertEqual(socketFiles(), [], "the publisher did not clean up the dead listener's socket file")
    }

    private func waitForFile(_ path: String, timeout: TimeInterval) -> Data? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let data = FileManager.default.contents(atPath: path) { return data }
            usleep(10_000)
        }
        return nil
    }
}
