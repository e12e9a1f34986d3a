import Foundation

enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func raw(_ bytes: [UInt8]) {
        FileHandle.standardOutput.write(Data(bytes))
    }

    /// `write(contentsOf:)` throws where `write(_:)` traps: a line that
    /// cannot be written (stderr kept on a disk that filled) must not kill
    /// a running sync. Output on stdout still traps: a command that could
    /// not print what it was asked for must not exit 0.
    static func error(_ text: String) {
        try? FileHandle.standardError.write(contentsOf: Data(("quire: " + text + "\n").utf8))
    }

    /// Pretty JSON with sorted keys, so scripts and tests get stable output.
    static func json(_ value: Any) {
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) else {
            error("internal: value is not JSON-serialisable")
            return
        }
        FileHandle.standardOutput.write(data)
        FileHandle.standardOutput.write(Data("\n".utf8))
    }

    /// Reads all of standard input, or a file; with `limit`, no further
    /// than that many bytes (the caller refuses a longer input).
    static func readInput(file: String?, limit: Int? = nil) throws(CommandFailure) -> [UInt8] {
        if let file, file != "-" { return try readFile(file, limit: limit) }
        return try read(FileHandle.standardInput, limit: limit, name: "standard input")
    }

    /// A whole file read to its end, a pipe or FIFO too (`--file <(...)`,
    /// `/dev/stdin`); `what` names it in the error ("invite file").
    static func readFile(_ path: String, what: String? = nil, limit: Int? = nil) throws(CommandFailure) -> [UInt8] {
        let name = what.map { "\($0) \(path)" } ?? path
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { throw CommandFailure("cannot read \(name): it is a folder") }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CommandFailure("cannot read \(name): \(String(cString: strerror(errno)))")
        }
        defer { try? handle.close() }
        return try read(handle, limit: limit, name: name)
    }

    private static func read(_ handle: FileHandle, limit: Int?, name: String) throws(CommandFailure) -> [UInt8] {
        var bytes: [UInt8] = []
        do {
            while limit.map({ bytes.count < $0 }) ?? true {
                let want = min(1 << 20, (limit ?? Int.max) - bytes.count)
                guard let data = try handle.read(upToCount: want), !data.isEmpty else { break }
                bytes += data
            }
        } catch {
            throw CommandFailure("cannot read \(name): \(error.localizedDescription)")
        }
        return bytes
    }

    static var isTerminal: Bool { isatty(STDOUT_FILENO) != 0 }
}

/// Dates as people type them: YYYY-MM-DD (UTC midnight) or seconds.
enum DateText {
    static func parse(_ text: String) -> Int64? {
        if let n = Int64(text) { return n }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        for format in ["yyyy-MM-dd", "yyyy-MM-dd'T'HH:mm:ss'Z'", "yyyy-MM-dd HH:mm"] {
            f.dateFormat = format
            if let d = f.date(from: text) { return Int64(d.timeIntervalSince1970) }
        }
        return nil
    }

    static func format(_ seconds: Int64, time: Bool = false) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = time ? "yyyy-MM-dd HH:mm:ss'Z'" : "yyyy-MM-dd"
        return f.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    static func today() -> String { format(Int64(Date().timeIntervalSince1970)) }
}
