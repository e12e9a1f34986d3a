import QuireCore

/// Contacts as vCard 4.0 (RFC 6350): FN, EMAIL, TEL and NOTE, which are the
/// fields the replica has. Written with CRLF line ends, lines folded at 75
/// octets, text escaped (`\\` `\,` `\;` `\n`).
///
/// Reading accepts LF or CRLF, folded lines, any case, groups and parameters
/// (which carry nothing the replica keeps), N when FN is missing, and
/// ignores PRODID, REV, UID and KIND, which describe the card rather than
/// the person. Any other property has no place in a quire contact: the card
/// is refused (close() fails) rather than stored with a field silently gone.
enum VCard {
    static func render(_ contact: Contact) -> [UInt8] {
        var lines = ["BEGIN:VCARD", "VERSION:4.0", "FN:" + escape(contact.name)]
        lines += contact.emails.map { "EMAIL:" + escape($0) }
        lines += contact.phones.map { "TEL:" + escape($0) }
        if let note = contact.note { lines.append("NOTE:" + escape(note)) }
        lines.append("END:VCARD")
        return lines.flatMap { fold($0) + Array("\r\n".utf8) }
    }

    /// The contact a card describes; `fileTitle` names it when the card has
    /// no FN or N. `previous` keeps the fields a card cannot carry.
    static func parse(_ bytes: [UInt8], fileTitle: String, previous: Contact?) throws(FormatError) -> Contact {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw FormatError(.illegalByteSequence, "is not UTF-8 text, so it cannot be a vCard")
        }
        var contact = Contact(name: fileTitle, updatedAt: previous?.updatedAt ?? Timestamp(seconds: 0))
        if text.allSatisfy({ $0.isWhitespace }) { return contact }   // a fresh empty file: a contact with just its name
        var sawBegin = false, sawEnd = false
        var formattedName: String?
        var structuredName: String?
        var note: String?
        for (number, line) in unfold(text).enumerated() where !line.isEmpty {
            if sawEnd { throw FormatError(.invalid, "has text after END:VCARD (line \(number + 1)); one card per file") }
            guard let colon = valueSeparator(line) else {
                throw FormatError(.invalid, "line \(number + 1) is not a vCard property (NAME:value): '\(line.prefix(40))'")
            }
            var name = String(Substring(line.unicodeScalars[..<colon])).uppercased()
            if let semicolon = name.firstIndex(of: ";") { name = String(name[..<semicolon]) }
            if let dot = name.lastIndex(of: ".") { name = String(name[name.index(after: dot)...]) }
            let value = String(Substring(line.unicodeScalars[line.unicodeScalars.index(after: colon)...]))
            if !sawBegin {
                guard name == "BEGIN", value.uppercased() == "VCARD" else {
                    throw FormatError(.invalid, "does not start with BEGIN:VCARD")
                }
                sawBegin = true
                continue
            }
            switch name {
            case "END":
                guard value.uppercased() == "VCARD" else { throw FormatError(.invalid, "has END:\(value) where END:VCARD belongs") }
                sawEnd = true
            case "VERSION":
                guard value == "4.0" || value == "3.0" else {
                    throw FormatError(.invalid, "is vCard version \(value); quire reads 4.0 (and 3.0)")
                }
            case "FN": formattedName = unescape(value)
            case "N":
                let parts = splitUnescaped(value, on: ";")
                let ordered = [parts.count > 3 ? parts[3] : "", parts.count > 1 ? parts[1] : "", parts.count > 2 ? parts[2] : "",
                               parts.first ?? "", parts.count > 4 ? parts[4] : ""]
                structuredName = ordered.filter { !$0.isEmpty }.joined(separator: " ")
            case "EMAIL": contact.emails.append(unescape(value))
            case "TEL": contact.phones.append(unescape(value))
            case "NOTE":
                if note != nil { throw FormatError(.invalid, "has more than one NOTE; a quire contact keeps one") }
                note = unescape(value)
            case "PRODID", "REV", "UID", "KIND", "BEGIN":
                if name == "BEGIN" { throw FormatError(.invalid, "holds a nested BEGIN:\(value); one card per file") }
            default:
                throw FormatError(.invalid, "has a \(name) property, which a quire contact cannot keep (it holds FN, EMAIL, TEL, NOTE); remove it or keep the card elsewhere")
            }
        }
        guard sawBegin else { throw FormatError(.invalid, "does not start with BEGIN:VCARD") }
        guard sawEnd else { throw FormatError(.invalid, "does not end with END:VCARD (cut short?)") }
        if let name = formattedName ?? structuredName, !name.isEmpty { contact.name = name }
        contact.note = note
        return contact
    }

    // MARK: Text values

    // Escapes work on Unicode scalars, not Characters: a backslash, comma
    // or semicolon followed by a combining mark is one Character, and was
    // neither escaped nor unescaped (found by tools/fuzz, vcard).

    static func escape(_ value: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": out.append(contentsOf: "\\\\".unicodeScalars)
            case ",": out.append(contentsOf: "\\,".unicodeScalars)
            case ";": out.append(contentsOf: "\\;".unicodeScalars)
            case "\n": out.append(contentsOf: "\\n".unicodeScalars)
            // vCard has no escape for a CR: a CRLF is written as \n, and a
            // lone CR, which a line end or a fold would eat, is dropped.
            case "\r": continue
            default: out.append(scalar)
            }
        }
        return String(out)
    }

    static func unescape(_ value: String) -> String {
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
            } else if scalar != "\r" {   // as escape drops it: a card cannot carry one
                out.append(scalar)
            }
        }
        if escaping { out.append("\\") }
        return String(out)
    }

    /// Splits on an unescaped separator, unescaping each part.
    private static func splitUnescaped(_ value: String, on separator: Unicode.Scalar) -> [String] {
        var parts: [String] = []
        var current = String.UnicodeScalarView()
        var escaping = false
        for scalar in value.unicodeScalars {
            if escaping { current.append("\\"); current.append(scalar); escaping = false; continue }
            if scalar == "\\" { escaping = true; continue }
            if scalar == separator { parts.append(unescape(String(current))); current = String.UnicodeScalarView(); continue }
            current.append(scalar)
        }
        parts.append(unescape(String(current)))
        return parts
    }

    // MARK: Lines

    /// Joins folded lines: a line break followed by a space or tab continues
    /// the line before it.
    static func unfold(_ text: String) -> [String] {
        var lines: [String] = []
        // Split bytes, not Characters: Swift treats "\r\n" as one Character.
        for raw in Array(text.utf8).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            var line = raw
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if let first = line.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t"), !lines.isEmpty {
                lines[lines.count - 1] += String(decoding: line.dropFirst(), as: UTF8.self)
            } else {
                lines.append(String(decoding: line, as: UTF8.self))
            }
        }
        return lines
    }

    /// Folds a line into pieces of at most 75 octets without splitting a
    /// character; continuation lines start with one space.
    static func fold(_ line: String) -> [UInt8] {
        var out: [UInt8] = []
        var used = 0
        for character in line {
            let bytes = Array(String(character).utf8)
            if used + bytes.count > 75 {
                out += Array("\r\n ".utf8)
                used = 1
            }
            out += bytes
            used += bytes.count
        }
        return out
    }

    /// The colon that ends the property name and parameters (a quoted
    /// parameter value may hold a colon), as an index of `line.unicodeScalars`.
    /// Scalars, not Characters: a value that starts with a combining mark
    /// makes one Character of the colon and the mark (":" + U+0EB8), and a
    /// card quire rendered would not read back (found by tools/fuzz, vcard).
    private static func valueSeparator(_ line: String) -> String.Index? {
        var quoted = false
        for index in line.unicodeScalars.indices {
            let scalar = line.unicodeScalars[index]
            if scalar == "\"" { quoted.toggle() }
            if scalar == ":" && !quoted { return index }
        }
        return nil
    }
}
