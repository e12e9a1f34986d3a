import Foundation
import QuireCore

// libFuzzer entry for the mount's text formats other than vCard (Sources/
// QuireFS/Formats, Layout/FileNames.swift): plans (iCalendar), settings, notes and
// journal days as files, memory events, dates, and file names. The first
// byte picks the decoder, the second is the length of a title or name that
// follows, the rest is the file. Beyond "never crash": what parses renders
// to text that parses back to the same value, and escaping a title is
// undone by unescaping it. Built and run by tools/fuzz/run.

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    writeSeeds(makeSeeds)
    return 0
}

private let parsedNamespaces: [Namespace] = [.notebook, .saga, .plans, .settings, .memory, .devices]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let titleLength = min(Int(bytes[1]), bytes.count - 2)
    let title = String(decoding: bytes[2..<(2 + titleLength)], as: UTF8.self)
    let file = Array(bytes[(2 + titleLength)...])
    switch bytes[0] % 5 {
    case 0:
        // Every namespace's RowFormat.parse; what parses renders and parses back.
        let namespace = parsedNamespaces[Int(bytes[0] / 5) % parsedNamespaces.count]
        guard let content = try? RowFormat.parse(namespace, title: title, bytes: file, previous: nil) else { return 0 }
        guard let rendered = RowFormat.render(content) else { return 0 }
        let again: RowContent
        do { again = try RowFormat.parse(namespace, title: title, bytes: rendered, previous: content) } catch {
            fatalError("fuzz invariant broken: rendered \(namespace) text does not parse (\(error.message))")
        }
        check(again == content, "\(namespace): render then parse gives the row back: \(content) became \(again)")
    case 1:
        if let plan = try? ICalendar.parse(file, title: title, key: nil, previous: nil) {
            check((try? ICalendar.parse(plan.bytes, title: title, key: nil, previous: plan)) == plan, "a plan is kept and parses back: \(plan)")
            _ = plan.summary; _ = plan.due; _ = plan.isDone; _ = plan.categories; _ = plan.priority
        }
    case 2:
        if let event = MemoryText.parse(file) {
            check(MemoryText.parse(MemoryText.render(event)) == event, "a memory event renders and parses back: \(event)")
        }
    case 3:
        let text = String(decoding: file, as: UTF8.self)
        if let seconds = TextDates.parse(text) {
            check(TextDates.parse(TextDates.format(seconds)) == seconds, "a date formats and parses back: \(text)")
            check(TextDates.parse(TextDates.formatDateTime(seconds)) == seconds, "a date-time formats and parses back: \(text)")
        }
        _ = SagaEntry.isValidDate(text)
    default:
        // File names: any name has a meaning; any title escapes reversibly
        // and its file name means that title.
        let name = String(decoding: file, as: UTF8.self)
        for namespace in Namespace.allCases { _ = FileNames.meaning(of: name, in: namespace) }
        check(FileNames.unescape(FileNames.escape(title)) == title, "escaping is undone by unescaping: \(Array(title.utf8))")
        let canonical = CanonicalName(title).text
        let stem = FileNames.escape(canonical)
        if !canonical.isEmpty, stem.utf8.count + 3 <= FileNames.maximumNameBytes, !FileNames.isJunk(stem + ".md") {
            check(FileNames.meaning(of: stem + ".md", in: .notebook) == .row(title: canonical),
                  "a title's file name means that title: \(Array(title.utf8))")
        }
        _ = FileNames.truncated(name, toBytes: Int(bytes[1]))
    }
    return 0
}

/// Files as the mount renders them and as editors leave them.
private func makeSeeds() throws -> [[UInt8]] {
    func seed(_ selector: UInt8, _ title: String, _ file: [UInt8]) -> [UInt8] {
        [selector, UInt8(title.utf8.count)] + Array(title.utf8) + file
    }
    let plan = Plan(title: "Ship it", notes: "Buy oat milk.\n\nCall the bank.\n", due: Timestamp(seconds: 1_714_521_600), isDone: false,
                    createdAt: Timestamp(seconds: 0), updatedAt: Timestamp(seconds: 0))
    let timed = Plan(title: "Timed", notes: "", due: Timestamp(seconds: 1_714_521_645), isDone: true, createdAt: Timestamp(seconds: 0),
                     updatedAt: Timestamp(seconds: 0))
    let event = MemoryEvent(at: Timestamp(seconds: 1_700_000_000), kind: "import", text: "Imported 3 notes.\n",
                            buries: [RowKey(bytes: [UInt8](repeating: 0xAB, count: 16))!])
    // Selector 0 + 5·i picks namespace i of parsedNamespaces.
    return [seed(0, "Field notes", Array("The river rose.\n\nWe moved the boats.\n".utf8)),
            seed(5, "2024-05-01", Array("Rain all day.\n".utf8)),
            seed(10, "Ship it", plan.bytes), seed(10, "Bare", Array("BEGIN:VCALENDAR\nBEGIN:VTODO\nSUMMARY:x\nEND:VTODO\nEND:VCALENDAR\n".utf8)),
            seed(15, "theme", Array("dark\n".utf8)), seed(20, "m", MemoryText.render(event)),
            seed(1, "Timed", timed.bytes),
            seed(1, "Todoman", Array("BEGIN:VCALENDAR\nVERSION:2.0\nBEGIN:VTODO\nDUE;VALUE=DATE:20261231\nRRULE:FREQ=DAILY\nEND:VTODO\nEND:VCALENDAR\n".utf8)),
            seed(2, "", MemoryText.render(event)),
            seed(3, "", Array("2024-02-29T23:59:60Z".utf8)), seed(3, "", Array("2023-02-31".utf8)), seed(3, "", Array("2024-05-01 12:00:00".utf8)),
            seed(4, ".hidden%/title\u{301}", Array("Caf\u{65}\u{301}%~1a2b3c4d.md".utf8)), seed(4, "%2E", Array("2024-05-01.md".utf8)),
            seed(4, "x", Array(".x.swp".utf8))]
}
