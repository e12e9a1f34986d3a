import Foundation
import QuireCore
import QuireStore

/// Tools for tests, drills and benchmarks. Not needed in daily use.
enum DebugCommands {
    static let debug = Command(
        name: "debug",
        summary: "tools for tests and drills (burst writes)",
        usage: """
            usage: quire debug burst [--count N] [--size BYTES] [--prefix TEXT]

            Writes N notes, one transaction each, as fast as it can, printing each
            note's key on its own line as soon as its write has committed. Used by
            the crash tests: after a kill -9, every key printed must be stored.
              --count N       notes to write (default 1000)
              --size BYTES    body size (default 256)
              --prefix TEXT   title prefix (default "burst")
            """,
        valued: ["count", "size", "prefix"]
    ) { args, inv in
        guard args.positional.first == "burst" else { throw UsageError("unknown debug tool '\(args.positional.first ?? "")'; try 'burst'") }
        let count = Int(args.value("count") ?? "1000") ?? -1
        let size = Int(args.value("size") ?? "256") ?? -1
        guard count >= 0, size >= 0 else { throw UsageError("--count and --size take non-negative integers") }
        let prefix = args.value("prefix") ?? "burst"
        let (_, store) = try inv.open()
        let filler = Array(String(repeating: "lorem ipsum dolor sit amet ", count: size / 27 + 1).utf8.prefix(size))
        for i in 0..<count {
            let row = try store.put(.note(Note(title: "\(prefix) \(i)", body: filler, createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))))
            // Unbuffered: the line appears only after the commit returned.
            let line = Array((row.key.hex + "\n").utf8)
            _ = line.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        }
    }
}
