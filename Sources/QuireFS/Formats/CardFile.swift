import Foundation
import QuireCore

/// The checks a vCard or an iCalendar file passes before it becomes a row,
/// shared by `VCard` and `ICalendar`: UTF-8, every line a content line
/// (`NAME;params:value`), one outer component (`BEGIN:VCARD` ...
/// `END:VCARD`) with its components balanced, nothing after it. A file
/// that fails is refused at close() with the line and the reason, and the
/// row keeps what it had (nothing is stored half-read).
///
/// Nothing else is judged: properties and parameters quire has never
/// heard of (`X-*`, a PHOTO of any encoding) are kept as written.
enum CardFile {
    struct Checked {
        var units: [[UInt8]]
        /// Each unit's place: the components open around it and its parsed line (nil for blank).
        var lines: [(path: [String], line: ContentLines.Line?)]
    }

    static func check(_ bytes: [UInt8], outer: String, kind: String) throws(FormatError) -> Checked {
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw FormatError(.illegalByteSequence, "is not UTF-8 text, so it cannot be \(kind)")
        }
        let units = ContentLines.units(of: bytes)
        var stack: [String] = []
        var closed = false
        var lineNumber = 1
        var lines: [(path: [String], line: ContentLines.Line?)] = []
        for unit in units {
            defer { lineNumber += unit.count { $0 == UInt8(ascii: "\n") } }
            let logical = ContentLines.unfolded(unit)
            if logical.allSatisfy({ $0.isWhitespace }) { lines.append((stack, nil)); continue }
            guard let line = ContentLines.parse(logical) else {
                throw FormatError(.invalid, "line \(lineNumber) is not a property (NAME:value): '\(ContentLines.quoted(logical.prefix(40)))'")
            }
            if closed {
                throw FormatError(.invalid, "has text after END:\(outer) (line \(lineNumber)); one \(kind) per file")
            }
            let value = line.value.uppercased()
            if stack.isEmpty && !(line.name == "BEGIN" && value == outer) {
                throw FormatError(.invalid, "does not start with BEGIN:\(outer) (line \(lineNumber) is '\(ContentLines.quoted(logical.prefix(40)))')")
            }
            switch line.name {
            case "BEGIN":
                if value == outer && !stack.isEmpty {
                    throw FormatError(.invalid, "holds a nested BEGIN:\(outer) (line \(lineNumber)); one \(kind) per file")
                }
                lines.append((stack, line))
                stack.append(value)
            case "END":
                guard stack.last == value else {
                    throw FormatError(.invalid, "has END:\(ContentLines.quoted(line.value[...])) at line \(lineNumber) where END:\(stack.last ?? outer) belongs")
                }
                stack.removeLast()
                closed = stack.isEmpty
                lines.append((stack, line))
            default:
                lines.append((stack, line))
            }
        }
        guard !lines.allSatisfy({ $0.line == nil }) else { throw FormatError(.invalid, "does not start with BEGIN:\(outer)") }
        guard closed else { throw FormatError(.invalid, "does not end with END:\(outer) (cut short?)") }
        return Checked(units: units, lines: lines)
    }

    /// `units` with `line` inserted after the first unit for which `after` holds.
    static func inserting(_ line: String, into checked: Checked, after: (_ path: [String], _ line: ContentLines.Line) -> Bool) -> [UInt8] {
        var out: [UInt8] = []
        var done = false
        // In the file's own line ends: one CRLF line in an LF file is a mixed file.
        let end = ContentLines.lineEnd(of: checked.units)
        for (unit, place) in zip(checked.units, checked.lines) {
            out += unit
            if !done, let parsed = place.line, after(place.path, parsed) {
                // A unit that does not end its line (the file's last, no
                // newline) gets one before the new line.
                if out.last != UInt8(ascii: "\n") { out += end }
                out += ContentLines.unit(line, end: end)
                done = true
            }
        }
        return out
    }

    /// The UID a card without one is given: the one its row showed before,
    /// else its row key as a UUID (stable: a tool that saves the card
    /// without it again gets the same one), else a fresh UUID.
    static func uid(previous: String?, key: RowKey?) -> String {
        if let previous { return previous }
        return key?.uuidText ?? UUID().uuidString.lowercased()
    }

    static func isBlank(_ bytes: [UInt8]) -> Bool {
        bytes.allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }
    }
}
