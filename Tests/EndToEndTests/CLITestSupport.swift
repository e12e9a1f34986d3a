import Foundation
import XCTest

/// Runs the built `quire` binary as a real process, like a user would.
enum QuireBinary {
    /// `.build/<config>/quire`, next to the test bundle.
    static var path: String {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("quire").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return FileManager.default.currentDirectoryPath + "/.build/debug/quire"
    }
}

struct RunResult {
    var status: Int32
    var stdout: String
    var stderr: String
    var stdoutBytes: [UInt8]
}

@discardableResult
func quire(_ args: [String], home: String? = nil, stdin: [UInt8]? = nil, env: [String: String] = [:],
           file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: QuireBinary.path)
    p.arguments = (home.map { ["--home", $0] } ?? []) + args
    var environment = ProcessInfo.processInfo.environment
    for (k, v) in env { environment[k] = v }
    p.environment = environment
    let out = Pipe(), err = Pipe(), inp = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = inp
    try p.run()
    if let stdin { inp.fileHandleForWriting.write(Data(stdin)) }
    try inp.fileHandleForWriting.close()
    // Read both pipes concurrently so a chatty process cannot block.
    let errData = ErrBox()
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async { errData.set(err.fileHandleForReading.readDataToEndOfFile()); group.leave() }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    p.waitUntilExit()
    return RunResult(status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                     stderr: String(decoding: errData.get(), as: UTF8.self), stdoutBytes: Array(outData))
}

final class ErrBox: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ d: Data) { lock.lock(); data = d; lock.unlock() }
    func get() -> Data { lock.lock(); defer { lock.unlock() }; return data }
}

func makeTemporaryDirectory(_ name: String = #function) -> String {
    let dir = NSTemporaryDirectory() + "quire-e2e-\(name.filter { $0.isLetter }.prefix(40))-\(UUID().uuidString.prefix(8))"
    try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

/// Runs a shell command (for mount, chmod and friends in fault tests).
@discardableResult
func shell(_ command: String) -> (status: Int32, output: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/sh")
    p.arguments = ["-c", command]
    let out = Pipe()
    p.standardOutput = out
    p.standardError = out
    try? p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: data, as: UTF8.self))
}

func jsonObject(_ text: String) throws -> Any {
    try JSONSerialization.jsonObject(with: Data(text.utf8))
}
