import Foundation

enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func raw(_ bytes: [UInt8]) {
        FileHandle.standardOutput.write(Data(bytes))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data(("quire: " + text + "\n").utf8))
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

    /// Reads all of standard input, or a file.
    static func readInput(file: String?) throws(CommandFailure) -> [UInt8] {
        if let file, file != "-" {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CommandFailure("cannot read \(file): \(String(cString: strerror(errno)))")
            }
            return Array(data)
        }
        return Array(FileHandle.standardInput.readDataToEndOfFile())
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
