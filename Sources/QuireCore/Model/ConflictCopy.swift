/// The name of an attachment version that lost to a concurrent one: shown
/// beside the winner, as Syncthing does, so neither version is lost:
/// `photo.sync-conflict-20261203-153000-1a2b3c4d.jpg` (the losing
/// version's edit time in UTC and the first 8 hex digits of the device that
/// wrote it). A pure function of the version, so every device shows the
/// same name.
public enum ConflictCopy {
    public static let marker = ".sync-conflict-"

    public static func title(of note: Note, writtenBy dot: Dot) -> String {
        let (stem, ext) = splitExtension(note.title)
        return stem + marker + stamp(note.updatedAt.seconds) + "-" + String(dot.actor.device.hex.prefix(8)) + ext
    }

    /// The versions of an attachment row that lose to what it shows: one
    /// per distinct content other than the shown one, in head order.
    public static func losingVersions(of row: Row) -> [RowHead] {
        guard row.heads.count > 1, case .note(let shown)? = row.content, shown.kind == .file else { return [] }
        var seen: Set<[UInt8]> = [shown.contentHash]
        return row.heads.filter { head in
            guard case .note(let note) = head.content, note.kind == .file else { return false }
            return seen.insert(note.contentHash).inserted
        }
    }

    /// `photo.jpg` is `photo` and `.jpg`; a leading or trailing dot starts no extension.
    public static func splitExtension(_ name: String) -> (stem: String, ext: String) {
        let bytes = Array(name.utf8)
        guard let dot = bytes.lastIndex(of: UInt8(ascii: ".")), dot > 0, dot < bytes.count - 1 else { return (name, "") }
        return (String(decoding: bytes[..<dot], as: UTF8.self), String(decoding: bytes[dot...], as: UTF8.self))
    }

    /// `YYYYMMDD-HHMMSS` in UTC.
    static func stamp(_ seconds: Int64) -> String {
        let (year, month, day, inDay) = CardDates.civil(seconds)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return pad(year, 4) + pad(month, 2) + pad(day, 2) + "-" + pad(inDay / 3600, 2) + pad(inDay % 3600 / 60, 2) + pad(inDay % 60, 2)
    }
}
