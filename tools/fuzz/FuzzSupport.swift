import Foundation

// Shared by every fuzz target (tools/fuzz/run compiles it into each).

/// A property every accepted input must have; a failure is a crash the
/// fuzzer keeps, like any other.
func check(_ condition: Bool, _ what: @autoclosure () -> String) {
    if !condition { fatalError("fuzz invariant broken: \(what())") }
}

/// Writes a target's seeds, made by the product's own encoders, into
/// QUIRE_FUZZ_SEEDS (`tools/fuzz/run --write-seeds`): the fuzzer starts from
/// the interesting shapes instead of rediscovering them.
func writeSeeds(_ make: () throws -> [[UInt8]]) {
    guard let dir = ProcessInfo.processInfo.environment["QUIRE_FUZZ_SEEDS"] else { return }
    do {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for (i, seed) in try make().enumerated() {
            guard FileManager.default.createFile(atPath: dir + "/seed-" + String(i), contents: Data(seed)) else {
                fatalError("cannot write a seed into \(dir)")
            }
        }
    } catch {
        fatalError("cannot make the seeds: \(error)")
    }
}

/// A scratch directory for targets whose decoder reads a file by path.
func fuzzScratchDirectory(_ name: String) -> String {
    let dir = NSTemporaryDirectory() + "/quire-fuzz-\(name)-\(getpid())"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}
