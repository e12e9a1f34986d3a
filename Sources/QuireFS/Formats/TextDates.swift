import Glibc

/// Dates as the text formats write them, in UTC: `YYYY-MM-DD` for a
/// midnight, `YYYY-MM-DDTHH:MM:SSZ` otherwise. Whole seconds, like every
/// stored time, so a date round-trips exactly.
enum TextDates {
    static func formatDate(_ seconds: Int64) -> String {
        let parts = components(seconds)
        return pad(parts.tm_year + 1900, 4) + "-" + pad(parts.tm_mon + 1, 2) + "-" + pad(parts.tm_mday, 2)
    }

    static func formatDateTime(_ seconds: Int64) -> String {
        let parts = components(seconds)
        return formatDate(seconds) + "T" + pad(parts.tm_hour, 2) + ":" + pad(parts.tm_min, 2) + ":" + pad(parts.tm_sec, 2) + "Z"
    }

    /// A date alone when the time is midnight UTC, else date and time.
    static func format(_ seconds: Int64) -> String {
        seconds % 86_400 == 0 ? formatDate(seconds) : formatDateTime(seconds)
    }

    /// Parses either form (also with a space instead of `T`, and without `Z`).
    static func parse(_ text: String) -> Int64? {
        let trimmed = text.trimmingSpaces
        let bytes = Array(trimmed.utf8)
        func number(_ range: Range<Int>) -> Int32? {
            guard range.upperBound <= bytes.count, !range.isEmpty else { return nil }
            var value: Int32 = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int32(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard bytes.count >= 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              (1...12).contains(month), (1...31).contains(day) else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        if bytes.count > 10 {
            var rest = Array(bytes[10...])
            if rest.last == UInt8(ascii: "Z") { rest.removeLast() }
            guard rest.count == 9, rest[0] == UInt8(ascii: "T") || rest[0] == UInt8(ascii: " "),
                  rest[3] == UInt8(ascii: ":"), rest[6] == UInt8(ascii: ":") else { return nil }
            let text = String(decoding: rest, as: UTF8.self)
            let fields = text.dropFirst().split(separator: ":").compactMap { Int32($0) }
            guard fields.count == 3, fields[0] < 24, fields[1] < 60, fields[2] < 61 else { return nil }
            parts.tm_hour = fields[0]
            parts.tm_min = fields[1]
            parts.tm_sec = fields[2]
        }
        let seconds = Int64(timegm(&parts))
        // timegm normalises 2023-02-31 into March: refuse dates that moved.
        guard formatDate(seconds) == String(decoding: bytes[0..<10], as: UTF8.self) else { return nil }
        return seconds
    }

    private static func components(_ seconds: Int64) -> tm {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        return parts
    }

    private static func pad(_ value: Int32, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (no Foundation needed).
    /// By scalar: a space before a combining mark is one Character, which
    /// a Character test kept whole, so a value read back with a space more
    /// than it was written with (tools/fuzz, mount-text).
    var trimmingSpaces: String {
        var scalars = unicodeScalars[...]
        while let first = scalars.first, first == " " || first == "\t" || first == "\r" { scalars = scalars.dropFirst() }
        while let last = scalars.last, last == " " || last == "\t" || last == "\r" { scalars = scalars.dropLast() }
        return String(Substring(scalars))
    }
}
