/// The content-line syntax that vCard (RFC 6350 §3.3, and 3.0, RFC 2426)
/// and iCalendar (RFC 5545 §3.1) share: `group.NAME;PARAM=v:value`, lines
/// folded by a line break followed by a space or a tab.
///
/// A card is kept as the exact bytes of its lines so that it comes back
/// byte for byte, whatever the writer's line ends, folding, letter case or
/// parameter spelling. `units(of:)` cuts the bytes into one unit per
/// logical line (the line, its continuations and any blank lines after it):
/// concatenating the units gives the bytes back exactly.
public enum ContentLines {
    /// One logical line, unfolded, read as far as merging and showing need:
    /// the property name (upper case, group removed), the parameters as
    /// written, and the raw value (still escaped).
    public struct Line: Equatable, Sendable {
        public var group: String?
        public var name: String
        public var parameters: String
        public var value: String

        /// The value of parameter `name` (case-insensitive), quotes removed.
        public func parameter(_ wanted: String) -> String? {
            for part in ContentLines.splitOutsideQuotes(parameters, on: ";") where !part.isEmpty {
                let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if pieces[0].uppercased() == wanted.uppercased() {
                    guard pieces.count == 2 else { return "" }
                    return String(pieces[1].filter { $0 != "\"" })
                }
            }
            return nil
        }
    }

    /// Cuts `bytes` into units of one logical line each; blank lines ride
    /// with the line before them (leading ones with the first line).
    public static func units(of bytes: [UInt8]) -> [[UInt8]] {
        var units: [[UInt8]] = []
        var current: [UInt8] = []
        var lineStart = 0
        var sawContent = false
        while lineStart < bytes.count {
            var end = lineStart
            while end < bytes.count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
            let next = min(end + 1, bytes.count)
            let line = bytes[lineStart..<next]
            let isContinuation = line.first == UInt8(ascii: " ") || line.first == UInt8(ascii: "\t")
            let isBlank = line.allSatisfy { $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }
            if isBlank || (isContinuation && sawContent) || !sawContent {
                current += line
                if !isBlank { sawContent = true }
            } else {
                units.append(current)
                current = Array(line)
            }
            lineStart = next
        }
        if !current.isEmpty { units.append(current) }
        return units
    }

    /// The unit's logical line: continuations joined, line ends and blank
    /// lines dropped. Invalid UTF-8 is replaced (callers check it first).
    /// A line end is any run of CRs before an LF (CRCRLF is a CRLF file
    /// passed once more through a text-mode converter: no value ends in a
    /// CR, vCard and iCalendar have no way to write one), and a byte-order
    /// mark before the first line (Windows tools write one) is no part of
    /// it: both are kept in the bytes, never read as text.
    public static func unfolded(_ unit: [UInt8]) -> String {
        var out: [UInt8] = []
        var atLineStart = true
        var index = unit.starts(with: byteOrderMark) ? byteOrderMark.count : 0
        while index < unit.count {
            let byte = unit[index]
            if byte == UInt8(ascii: "\n") { atLineStart = true; index += 1; continue }
            if byte == UInt8(ascii: "\r") {
                var next = index + 1
                while next < unit.count && unit[next] == UInt8(ascii: "\r") { next += 1 }
                if next == unit.count || unit[next] == UInt8(ascii: "\n") { index = next; continue }
            }
            if atLineStart && !out.isEmpty && (byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")) {
                atLineStart = false; index += 1; continue   // a fold: drop the one whitespace
            }
            atLineStart = false
            out.append(byte)
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// The line end a text's units use (CRLF when none says, as the RFCs write).
    public static func lineEnd(of units: [[UInt8]]) -> [UInt8] {
        for unit in units {
            guard let newline = unit.firstIndex(of: UInt8(ascii: "\n")) else { continue }
            return newline > 0 && unit[newline - 1] == UInt8(ascii: "\r") ? Array("\r\n".utf8) : Array("\n".utf8)
        }
        return Array("\r\n".utf8)
    }

    /// Text of a line quoted in a message: control characters and a
    /// byte-order mark escaped (`BEGIN:VCARD\r`), so a refusal names what
    /// a terminal would not show.
    public static func quoted(_ text: Substring) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\u{FEFF}": out += "\\u{FEFF}"
            default:
                if scalar.properties.generalCategory == .control {
                    out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// Reads a logical line; nil when it is not `NAME[;params]:value`.
    public static func parse(_ logical: String) -> Line? {
        let scalars = logical.unicodeScalars
        var quoted = false
        var colon: String.UnicodeScalarView.Index?
        for index in scalars.indices {
            let scalar = scalars[index]
            if scalar == "\"" { quoted.toggle() }
            if scalar == ":" && !quoted { colon = index; break }
        }
        guard let colon else { return nil }
        let head = String(scalars[..<colon])
        let value = String(scalars[scalars.index(after: colon)...])
        var nameAndGroup = head
        var parameters = ""
        if let semicolon = head.firstIndex(of: ";") {
            nameAndGroup = String(head[..<semicolon])
            parameters = String(head[head.index(after: semicolon)...])
        }
        var group: String?
        var name = nameAndGroup
        if let dot = nameAndGroup.lastIndex(of: ".") {
            group = String(nameAndGroup[..<dot])
            name = String(nameAndGroup[nameAndGroup.index(after: dot)...])
        }
        // A name is letters, digits and dashes (RFC 6350 §3.3, RFC 5545 §3.1).
        guard !name.isEmpty, name.unicodeScalars.allSatisfy({ $0.isASCIIAlphanumeric || $0 == "-" }) else { return nil }
        return Line(group: group, name: name.uppercased(), parameters: parameters, value: value)
    }

    /// Splits on `separator` outside double quotes.
    static func splitOutsideQuotes(_ text: String, on separator: Character) -> [String] {
        var parts: [String] = []
        var current = ""
        var quoted = false
        for character in text {
            if character == "\"" { quoted.toggle() }
            if character == separator && !quoted { parts.append(current); current = ""; continue }
            current.append(character)
        }
        parts.append(current)
        return parts
    }

    // MARK: Text values (RFC 6350 §3.4, RFC 5545 §3.3.11)

    // Escapes work on Unicode scalars, not Characters: a backslash, comma
    // or semicolon followed by a combining mark is one Character, and was
    // neither escaped nor unescaped (found by tools/fuzz, vcard).

    public static func escape(_ value: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": out.append(contentsOf: "\\\\".unicodeScalars)
            case ",": out.append(contentsOf: "\\,".unicodeScalars)
            case ";": out.append(contentsOf: "\\;".unicodeScalars)
            case "\n": out.append(contentsOf: "\\n".unicodeScalars)
            // No escape exists for a CR: a CRLF is written as \n, and a
            // lone CR, which a line end or a fold would eat, is dropped.
            case "\r": continue
            default: out.append(scalar)
            }
        }
        return String(out)
    }

    public static func unescape(_ value: String) -> String {
        var out = String.UnicodeScalarView()
        var escaping = false
        for scalar in value.unicodeScalars {
            if escaping {
                switch scalar {
                case "n", "N": out.append("\n")
                default: out.append(scalar)
                }
                escaping = false
            } else if scalar == "\\" {
                escaping = true
            } else if scalar != "\r" {
                out.append(scalar)
            }
        }
        if escaping { out.append("\\") }
        return String(out)
    }

    /// Splits a structured or list value on an unescaped separator,
    /// unescaping each part.
    public static func splitUnescaped(_ value: String, on separator: Unicode.Scalar) -> [String] {
        var parts: [String] = []
        var current = String.UnicodeScalarView()
        var escaping = false
        for scalar in value.unicodeScalars {
            if escaping { current.append("\\"); current.append(scalar); escaping = false; continue }
            if scalar == "\\" { escaping = true; continue }
            if scalar == separator { parts.append(unescape(String(current))); current = String.UnicodeScalarView(); continue }
            current.append(scalar)
        }
        if escaping { current.append("\\") }
        parts.append(unescape(String(current)))
        return parts
    }

    /// `NAME:value` as a unit: folded at 75 octets without splitting a
    /// character, CRLF line ends (what RFC 6350 and RFC 5545 ask of
    /// writers), or `end`'s (the text it goes into).
    public static func unit(_ line: String, end: [UInt8] = Array("\r\n".utf8)) -> [UInt8] {
        var out: [UInt8] = []
        var used = 0
        for character in line {
            let bytes = Array(String(character).utf8)
            if used + bytes.count > 75 {
                out += end + [UInt8(ascii: " ")]
                used = 1
            }
            out += bytes
            used += bytes.count
        }
        return out + end
    }
}

extension Unicode.Scalar {
    var isASCIIAlphanumeric: Bool {
        (value >= 0x30 && value <= 0x39) || (value >= 0x41 && value <= 0x5A) || (value >= 0x61 && value <= 0x7A)
    }
}
