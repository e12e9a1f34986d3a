import Foundation
import QuireCore
import QuireFuse

/// Why written text could not become a row: the errno close() returns and
/// a sentence for the log and `.quire/status`.
struct FormatError: Error, Equatable {
    enum Kind: Equatable { case invalid, illegalByteSequence, readOnly, tooLarge }
    var kind: Kind
    var message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    var fuseError: FuseError {
        switch kind {
        case .invalid: return .invalid
        case .illegalByteSequence: return .illegalByteSequence
        case .readOnly: return .permissionDenied
        case .tooLarge: return .fileTooLarge
        }
    }
}

/// The text of each kind of row as a file, both ways. Every format
/// round-trips: `parse(render(row))` gives the row back. Documented in
/// mount/README.md.
enum RowFormat {
    static func render(_ content: RowContent) -> [UInt8]? {
        switch content {
        case .note(let note): return note.body
        case .saga(let entry): return entry.text
        case .plan(let plan): return plan.bytes
        case .contact(let contact): return contact.bytes
        case .setting(let setting): return Array(setting.value.utf8) + [UInt8(ascii: "\n")]
        case .memory(let event): return MemoryText.render(event)
        case .device: return nil
        }
    }

    /// The row `bytes` describe, written to the file of `title`. `previous`
    /// is the row as stored, whose fields the text does not carry (tags,
    /// creation time, paragraph tombstones) are kept, and against which a
    /// card's changed lines are found. `key`: the row's (a card without a
    /// UID is given one made from it).
    static func parse(_ namespace: Namespace, title: String, bytes: [UInt8], previous: RowContent?,
                      key: RowKey? = nil) throws(FormatError) -> RowContent {
        let zero = Timestamp(seconds: 0)
        switch namespace {
        case .notebook:
            var note = Note(title: title, body: bytes, createdAt: zero, updatedAt: zero)
            if case .note(let old)? = previous {
                note.tags = old.tags
                note.createdAt = old.createdAt
                note.deletedParagraphs = old.deletedParagraphs
            }
            return .note(note)
        case .saga:
            var entry = SagaEntry(date: title, text: bytes, updatedAt: zero)
            if case .saga(let old)? = previous { entry.deletedParagraphs = old.deletedParagraphs }
            return .saga(entry)
        case .plans:
            guard case .plan(let old)? = previous else { return .plan(try ICalendar.parse(bytes, title: title, key: key, previous: nil)) }
            return .plan(try ICalendar.parse(bytes, title: title, key: key, previous: old))
        case .contacts:
            guard case .contact(let old)? = previous else { return .contact(try VCard.parse(bytes, title: title, key: key, previous: nil)) }
            return .contact(try VCard.parse(bytes, title: title, key: key, previous: old))
        case .settings:
            guard var value = String(validating: bytes, as: UTF8.self) else {
                throw FormatError(.illegalByteSequence, "is not UTF-8 text; a setting's value is text")
            }
            // The file shows the value and one newline; editors add it too.
            if value.utf8.last == UInt8(ascii: "\n") { value = String(decoding: bytes.dropLast(), as: UTF8.self) }
            return .setting(Setting(name: title, value: value, updatedAt: zero))
        case .memory, .devices:
            throw FormatError(.readOnly, "is read-only: memory is append-only (record events with 'quire put memory')")
        }
    }
}

/// A memory event as text (read-only in the mount): `at:`, `kind:`, an
/// optional `buries:` list of event keys, a blank line, the text.
enum MemoryText {
    static func render(_ event: MemoryEvent) -> [UInt8] {
        var header = "at: \(TextDates.formatDateTime(event.at.seconds))\nkind: \(event.kind)\n"
        if !event.buries.isEmpty { header += "buries: " + event.buries.map(\.hex).joined(separator: ",") + "\n" }
        return Array((header + "\n" + event.text).utf8)
    }

    static func parse(_ bytes: [UInt8]) -> MemoryEvent? {
        // Lines are split on bytes, as PlanText does: Swift reads "\r\n" as
        // one Character, so splitting text on "\n" left a CRLF inside a
        // header value, which render then wrote as a different event.
        var at: Int64?, kind: String?, buries: [RowKey] = []
        var offset = 0
        for rawLine in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            offset += rawLine.count + 1
            let line = rawLine.last == UInt8(ascii: "\r") ? rawLine.dropLast() : rawLine
            if line.isEmpty {
                guard let at, let kind, offset <= bytes.count else { return nil }
                return MemoryEvent(at: Timestamp(seconds: at), kind: kind, text: String(decoding: bytes[offset...], as: UTF8.self), buries: buries)
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces
            switch String(decoding: line[..<colon], as: UTF8.self) {
            case "at": at = TextDates.parse(value)
            case "kind": kind = value
            case "buries": buries = value.split(separator: ",").compactMap { RowKey(hex: String($0)) }
            default: return nil
            }
        }
        return nil   // no blank line before the text
    }
}

/// The mount's reading of a file's text, for `quire put contacts NAME
/// --file card.vcf` and `quire put plans NAME --file todo.ics`: one rule
/// for what a card may hold, wherever it comes in.
public enum FileText {
    public struct Refusal: Error, CustomStringConvertible {
        public let description: String
    }

    public static func parse(_ namespace: Namespace, title: String, bytes: [UInt8], previous: RowContent?,
                             key: RowKey?) throws(Refusal) -> RowContent {
        do { return try RowFormat.parse(namespace, title: title, bytes: bytes, previous: previous, key: key) } catch {
            throw Refusal(description: error.message)
        }
    }

    /// The file a row shows in the mount.
    public static func render(_ content: RowContent) -> [UInt8]? { RowFormat.render(content) }
}
