import Foundation
import QuireCore

// libFuzzer entry for vCards written through the mount (Sources/QuireFS/
// Formats/VCard.swift, CardFile.swift, Sources/QuireCore/Cards): whatever
// an address book or an editor saves into contacts/. Input: one byte of
// title length, the file's title, the card. Beyond "never crash": an
// accepted card is kept byte for byte (a UID line added when it has none),
// read back it is the same contact, and its lines concatenate to the file.
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
    let previous = Contact(name: "previous", emails: ["p@example.org"], uid: "p", updatedAt: Timestamp(seconds: 5))
    guard let contact = try? VCard.parse(card, title: title, key: nil, previous: previous) else { return 0 }
    check(ContentLines.units(of: card).flatMap { $0 } == card, "units concatenate to the file")
    if !CardFile.isBlank(card) {
        let added = contact.bytes.count - card.count
        check(added >= 0, "nothing of the card is lost: \(String(decoding: card, as: UTF8.self).debugDescription)")
    }
    let again: Contact
    do { again = try VCard.parse(contact.bytes, title: title, key: nil, previous: contact) } catch {
        fatalError("fuzz invariant broken: a kept card does not parse (\(error.message))")
    }
    check(again == contact, "a kept card reads back as itself: \(contact) became \(again)")
    _ = contact.name; _ = contact.emails; _ = contact.phones; _ = contact.note
    _ = try? RowFormat.parse(.contacts, title: title, bytes: card, previous: .contact(previous))
    return 0
}

/// Cards as the mount renders them, and as address books write them.
private func makeSeeds() throws -> [[UInt8]] {
    func seed(_ title: String, _ card: [UInt8]) -> [UInt8] { [UInt8(title.utf8.count)] + Array(title.utf8) + card }
    let full = Contact(name: "Ada Lovelace, Countess; of Lovelace", emails: ["ada@example.org", "a@b.c"], phones: ["+44 20 7946 0000"],
                       note: "Met at the\nAnalytical Engine demo \\ 1843. " + String(repeating: "long line ", count: 12), uid: "ada",
                       updatedAt: Timestamp(seconds: 1))
    let thunderbird = "BEGIN:VCARD\r\nVERSION:3.0\r\nPRODID:-//Sabre//Sabre VObject 4.1.6//EN\r\nUID:1234\r\n"
        + "N:Lovelace;Ada;King;Lady;\r\nitem1.EMAIL;TYPE=\"INTERNET,pref\":ada@example.org\r\nTEL;TYPE=cell:+44 20\r\n "
        + "7946 0000\r\nREV:20240101T000000Z\r\nEND:VCARD\r\n"
    return [seed("Ada", full.bytes), seed("Bob", Contact(name: "Bob", updatedAt: Timestamp(seconds: 0)).bytes),
            seed("Lady", Array(thunderbird.utf8)), seed("Empty", [])]
}
