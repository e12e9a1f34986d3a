import Foundation
import QuireCore

// libFuzzer entry for vCards written through the mount (Sources/QuireFS/
// Formats/VCard.swift): whatever an address book or an editor saves into
// contacts/. Input: one byte of title length, the file's title, the card.
// Beyond "never crash": an accepted card renders to a card that parses
// back to the same contact but for carriage returns (vCard has no escape
// for a CR: VCard.escape writes a CRLF inside a value as \n, and a lone CR
// as it is, where a line end or a fold may take it), and after that one
// normalization rendering is a fixed point: the mount's file stays put.
// Built and run by tools/fuzz/run.

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    writeSeeds(makeSeeds)
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let titleLength = min(Int(bytes[0]), bytes.count - 1)
    let title = String(decoding: bytes[1..<(1 + titleLength)], as: UTF8.self)
    let card = Array(bytes[(1 + titleLength)...])
    let previous = Contact(name: "previous", emails: ["p@example.org"], updatedAt: Timestamp(seconds: 5))
    guard let contact = try? VCard.parse(card, fileTitle: title, previous: previous) else { return 0 }
    let rendered = VCard.render(contact)
    let again: Contact
    do { again = try VCard.parse(rendered, fileTitle: title, previous: previous) } catch {
        fatalError("fuzz invariant broken: a rendered card does not parse (\(error.message))")
    }
    check(withoutCR(again) == withoutCR(contact), "render then parse gives the contact back: \(contact) became \(again)")
    let settled = VCard.render(again)
    check((try? VCard.parse(settled, fileTitle: title, previous: previous)).map(VCard.render) == settled,
          "a rendered card is a fixed point: \(String(decoding: settled, as: UTF8.self).debugDescription)")
    _ = try? RowFormat.parse(.contacts, title: title, bytes: card, previous: .contact(previous))
    return 0
}

private func withoutCR(_ contact: Contact) -> Contact {
    func strip(_ text: String) -> String { String(String.UnicodeScalarView(text.unicodeScalars.filter { $0 != "\r" })) }
    var out = contact
    out.name = strip(contact.name)
    out.emails = contact.emails.map(strip)
    out.phones = contact.phones.map(strip)
    out.note = contact.note.map(strip)
    return out
}

/// Cards as the mount renders them, and as address books write them.
private func makeSeeds() throws -> [[UInt8]] {
    func seed(_ title: String, _ card: [UInt8]) -> [UInt8] { [UInt8(title.utf8.count)] + Array(title.utf8) + card }
    let full = Contact(name: "Ada Lovelace, Countess; of Lovelace", emails: ["ada@example.org", "a@b.c"], phones: ["+44 20 7946 0000"],
                       note: "Met at the\nAnalytical Engine demo \\ 1843. " + String(repeating: "long line ", count: 12), updatedAt: Timestamp(seconds: 1))
    let thunderbird = "BEGIN:VCARD\r\nVERSION:3.0\r\nPRODID:-//Sabre//Sabre VObject 4.1.6//EN\r\nUID:1234\r\n"
        + "N:Lovelace;Ada;King;Lady;\r\nitem1.EMAIL;TYPE=\"INTERNET,pref\":ada@example.org\r\nTEL;TYPE=cell:+44 20\r\n "
        + "7946 0000\r\nREV:20240101T000000Z\r\nEND:VCARD\r\n"
    return [seed("Ada", VCard.render(full)), seed("Bob", VCard.render(Contact(name: "Bob", updatedAt: Timestamp(seconds: 0)))),
            seed("Lady", Array(thunderbird.utf8)), seed("Empty", [])]
}
