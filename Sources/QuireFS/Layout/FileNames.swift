import QuireCore

/// How rows are named as files, and which names are not rows at all.
///
/// A row's file name is its escaped title plus the namespace's extension.
/// Escaping is reversible (`unescape(escape(t)) == t`): `/`, NUL and
/// control characters become `%XX`, and so does a leading `.`, so no row can
/// look like a hidden file (every hidden file is editor junk, see `isJunk`);
/// a `%` becomes `%25` only where what follows would read as an escape.
/// Markers start with `%~`, which escaping never produces: `%~1a2b3c4d`
/// before the extension tells two rows with the same title apart (the row
/// with the smallest key keeps the plain name), and a title too long for a
/// 255-byte name is cut and always marked. See mount/README.md.
///
/// Names are NFC (`CanonicalName`): a name is normalized before it is
/// decoded, a decoded title is NFC, and a row's name is made from the NFC
/// form of its title, so every name made here is NFC and decodes back to
/// the NFC title. A combining mark right after an escape is escaped too
/// (byte by byte): left as it is, NFC would compose it with the escape's
/// last hex digit (`%2E` + U+0301 is `%2É`) and the escape would be lost.
enum FileNames {
    static let maximumNameBytes = 255
    static let marker = "%~"

    /// The extension every row file of `namespace` carries.
    static func fileExtension(_ namespace: Namespace) -> String {
        switch namespace {
        case .notebook, .saga: return ".md"
        case .contacts: return ".vcf"
        case .plans: return ".ics"
        case .settings, .memory, .devices: return ".txt"
        }
    }

    static func escape(_ title: String) -> String {
        if title.isEmpty { return "%" }   // a lone % only ever means "empty"
        if title == "%" { return "%25" }
        if title == "%25" { return "%2525" }   // `%25` alone is the name of `%`
        let scalars = Array(title.unicodeScalars)
        var out = ""
        var afterEscape = false
        for (index, scalar) in scalars.enumerated() {
            var needsEscape = scalar == "/" || scalar.value < 0x20 || scalar.value == 0x7F || (index == 0 && scalar == ".")
            if scalar == "%" {
                // A `%` stays as typed unless what follows it would read
                // as an escape here, or as a key marker (`%~`).
                if index + 1 < scalars.count, scalars[index + 1] == "~" {
                    needsEscape = true
                } else if index + 2 < scalars.count, let high = hexValue(scalars[index + 1]), let low = hexValue(scalars[index + 2]) {
                    needsEscape = decodes(high << 4 | low, atStart: out.isEmpty, afterEscape: afterEscape)
                    if high << 4 | low == UInt8(ascii: "%") {
                        // `%25` reads as an escape only before `~` or another escape (`escapesPercent`).
                        let rest = scalars[(index + 3)...].prefix(2).map { $0.isASCII ? UInt8($0.value) : 0 }
                        needsEscape = escapesPercent([37, 50, 53] + rest, at: 0, atStart: out.isEmpty, afterEscape: afterEscape)
                    }
                }
            }
            if needsEscape {
                out += "%" + hexByte(UInt8(scalar.value))
                afterEscape = true
            } else if afterEscape && scalar.properties.canonicalCombiningClass != .notReordered {
                // Would compose with the hex digit before it: escape its bytes.
                for byte in String(scalar).utf8 { out += "%" + hexByte(byte) }
            } else {
                out.unicodeScalars.append(scalar)
                afterEscape = false
            }
        }
        return out
    }

    /// The first control character of `title` (U+0000 to U+001F, U+007F),
    /// which a row's name shows escaped (`%0A`).
    static func controlCharacter(in title: String) -> Unicode.Scalar? {
        title.unicodeScalars.first { $0.value < 0x20 || $0.value == 0x7F }
    }

    /// Only what `escape` writes is read back as an escape, so a name typed
    /// with other `%XX` in it (`What%20is%20FUSE.md`, as web clippers and
    /// URL-minded tools name files) is its own title and lists under the
    /// name it was made with (a mirror made by `rsync --delete` finds it).
    static func unescape(_ base: String) -> String {
        if base == "%" { return "" }
        let bytes = Array(base.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        var afterEscape = false
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = upperHexDigit(bytes[index + 1]), let low = upperHexDigit(bytes[index + 2]),
               decodes(high << 4 | low, atStart: index == 0, afterEscape: afterEscape),
               high << 4 | low != UInt8(ascii: "%") || base == "%25"
                || escapesPercent(bytes, at: index, atStart: index == 0, afterEscape: afterEscape) {
                out.append(high << 4 | low)
                index += 3
                afterEscape = true
            } else {
                out.append(bytes[index])
                index += 1
                afterEscape = false
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether the `%25` at `index` is one `escape` writes: a `%` followed
    /// by what would read as an escape there, or by `~`. Any other `%25`
    /// is typed text (`100%25 sure.md` keeps its name).
    private static func escapesPercent(_ bytes: [UInt8], at index: Int, atStart: Bool, afterEscape: Bool) -> Bool {
        let next = index + 3
        guard next < bytes.count else { return false }
        if bytes[next] == UInt8(ascii: "~") { return true }
        guard next + 1 < bytes.count, let high = upperHexDigit(bytes[next]), let low = upperHexDigit(bytes[next + 1]) else { return false }
        return decodes(high << 4 | low, atStart: atStart, afterEscape: afterEscape)
    }

    /// Whether `%XX` for `byte` is an escape `escape` can write at that
    /// place: `%`, `/` and control characters anywhere, a dot first (a
    /// leading `.`, or `..`), and the UTF-8 bytes of a combining mark
    /// right after an escape.
    private static func decodes(_ byte: UInt8, atStart: Bool, afterEscape: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "%"), UInt8(ascii: "/"), 0x00..<0x20, 0x7F: return true
        case UInt8(ascii: "."): return atStart || afterEscape
        case 0x80...: return afterEscape
        default: return false
        }
    }

    private static func hexValue(_ scalar: Unicode.Scalar) -> UInt8? {
        scalar.isASCII ? upperHexDigit(UInt8(scalar.value)) : nil
    }

    /// A hex digit as `escape` writes it: 0-9 and A-F. A typed `%2f` (as
    /// URL-minded tools name files) is no escape, so it keeps its name.
    private static func upperHexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Editor and desktop junk that lives in the local scratch area: every
    /// hidden file (vim `.x.swp`/`.x.swx`, emacs `.#x`, macOS `._x` and
    /// `.DS_Store`, gedit `.goutputstream-*`), backups ending in `~`, emacs
    /// autosaves `#x#`, `*.swp`/`*.swx`, sed -i's `sedXXXXXX`, perl -i's `XXXXXXXX`, zip's `ziXXXXXX`,
    /// dos2unix's `d2utmpXXXXXX` (unix2dos's `u2dtmpXXXXXX`), Python's
    /// `tmpXXXXXXXX`, vim's write probe `4913` (and the numbers it tries
    /// after it: 4913 + 123·k), the "safe write" of JetBrains IDEs
    /// (`x___jb_tmp___` renamed over `x` once `x` became `x___jb_old___`:
    /// as rows, the note would be deleted and made anew at every save), and
    /// `x.ext.tmp`, the temp file many programs (Obsidian's settings among
    /// them) write before renaming it to `x.ext`: as a row, each save left a
    /// tombstone and showed the temp file to siblings for a moment.
    static func isJunk(_ name: String) -> Bool {
        if name.hasPrefix(".") || name.hasSuffix("~") { return true }
        if name.hasSuffix("___jb_tmp___") || name.hasSuffix("___jb_old___") || name.hasSuffix("___jb_bak___") { return true }
        if name.hasSuffix(".tmp"), let dot = name.dropLast(4).lastIndex(of: "."), dot > name.startIndex,
           name.index(after: dot) < name.index(name.endIndex, offsetBy: -4) { return true }
        if name.hasSuffix(".swp") || name.hasSuffix(".swx") { return true }
        if name.utf8.count >= 2, name.hasPrefix("#"), name.hasSuffix("#") { return true }
        if let random = mkstempRandomPart(Array(name.utf8)), random.contains(where: { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) }) {
            return true
        }
        if name.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
           let number = Int(name), number >= 4913, (number - 4913) % 123 == 0 { return true }
        return false
    }

    /// The random part of a temp file's name renamed over its target
    /// right after: sed -i's (`sed` and six letters or digits), perl -i's
    /// (`XX` and six), zip's (`zi` and six), dos2unix's and unix2dos's
    /// (`d2utmp`, `u2dtmp` and six), and Python tempfile's and
    /// scripts' (`tmp` and five to eight of a-z, 0-9, `_`). With a digit or
    /// a capital in it, the name is editor junk; words fit these names
    /// too (`sedentary`, `tmp_notes`, `zillions`), and such a file waits as
    /// temp files do (`TempName.always`), then syncs.
    private static func mkstempRandomPart(_ bytes: [UInt8]) -> ArraySlice<UInt8>? {
        func isASCIIAlphanumeric(_ c: UInt8) -> Bool {
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
        }
        func starts(_ prefix: String) -> Bool { bytes.starts(with: prefix.utf8) }
        if bytes.count == 9, starts("sed"), bytes.dropFirst(3).allSatisfy(isASCIIAlphanumeric) { return bytes.dropFirst(3) }
        if bytes.count == 12, starts("d2utmp") || starts("u2dtmp"), bytes.dropFirst(6).allSatisfy(isASCIIAlphanumeric) { return bytes.dropFirst(6) }
        if bytes.count == 8, starts("XX") || starts("zi"), bytes.dropFirst(2).allSatisfy(isASCIIAlphanumeric) { return bytes.dropFirst(2) }
        if (8...11).contains(bytes.count), starts("tmp"),
           bytes.dropFirst(3).allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == UInt8(ascii: "_") }) {
            return bytes.dropFirst(3)
        }
        return nil
    }

    /// How a name may be a temp file's, which may also be a real file's.
    enum TempName: Equatable {
        /// `x.tmp` (LibreOffice's `luXXXX.tmp`), `x.lock` (git's lock
        /// files: `index.lock`, `HEAD.lock`, renamed over their file or
        /// removed), git's `tmp_obj_XXXXXX` (and `tmp_idx_`, `tmp_pack_`,
        /// and `git stash`'s `index.stash.PID`),
        /// SQLite's `x.db-journal`, `x.db-wal` and `x.db-shm` (made and
        /// removed by every transaction, or while the database is open),
        /// and mkstemp's names with a fixed prefix (`mkstempRandomPart`).
        case always
        /// `x.XXXXXX` (six letters or digits: mkstemp's, so GLib's
        /// `g_file_set_contents` and Qt's `QSaveFile`), `x.xxxxxxxx` (eight
        /// lower-case letters, digits or `_`, one a digit or `_`: Python's
        /// `tempfile.mkstemp(prefix="x.")`, what atomic-write helpers use), `x.NNNNNNN` (six
        /// to ten digits: npm's write-file-atomic), `x.tmpN` (one to ten
        /// digits: Go's `os.CreateTemp(dir, "x.tmp*")`) and `x.oXXXXXX`
        /// (GNU patch's output, `r` for its rejects) and `x.bak`: a temp file's when
        /// the stem `x` has an extension of its own (`Plan.md.aB3dE9`) or
        /// names a file beside it.
        case besideItsStem(String)
    }

    /// Whether `name` is one temp files are given. The mount keeps such a
    /// file local for a moment (`ProvisionalFiles`): renamed over a note it
    /// was never a row; left where it is, it becomes one. Notes (`.md`)
    /// never match.
    static func tempName(_ name: String) -> TempName? {
        let bytes = Array(name.utf8)
        if name.hasPrefix("tmp_obj_") || name.hasPrefix("tmp_idx_") || name.hasPrefix("tmp_pack_") || name.hasPrefix("index.stash.") { return .always }
        if mkstempRandomPart(bytes) != nil { return .always }
        if name.hasSuffix("-journal") || name.hasSuffix("-wal") || name.hasSuffix("-shm") { return .always }
        guard let dot = bytes.lastIndex(of: UInt8(ascii: ".")), dot > 0 else { return nil }
        let suffix = bytes[(dot + 1)...]
        func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
        func isAlphanumeric(_ c: UInt8) -> Bool { isDigit(c) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) }
        if suffix.elementsEqual("tmp".utf8) || suffix.elementsEqual("lock".utf8) { return .always }
        let goTemp = suffix.starts(with: "tmp".utf8) && (4...13).contains(suffix.count) && suffix.dropFirst(3).allSatisfy(isDigit)
        func isPythonTempCharacter(_ c: UInt8) -> Bool { isDigit(c) || (c >= 0x61 && c <= 0x7A) || c == UInt8(ascii: "_") }
        // A digit or `_` among them tells it from a word (`Cargo.lockfile`, `x.markdown`).
        let pythonTemp = suffix.count == 8 && suffix.allSatisfy(isPythonTempCharacter)
            && suffix.contains { isDigit($0) || $0 == UInt8(ascii: "_") }
        // GNU patch's output (`o`) or rejects (`r`) and mkstemp's six, one a
        // digit or a capital (`Plan.md.oAZTXlX`): as a row, every patch
        // applied showed it to siblings and left a tombstone.
        let random = suffix.dropFirst()
        let gnuPatchTemp = suffix.count == 7 && (suffix.first == UInt8(ascii: "o") || suffix.first == UInt8(ascii: "r"))
            && random.allSatisfy(isAlphanumeric) && random.contains { isDigit($0) || ($0 >= 0x41 && $0 <= 0x5A) }
        // `x.bak`: the backup Python's `fileinput` and `perl -i.bak` rename
        // a note to before writing it anew (`RenameFacts.isBackupStep`).
        let backup = suffix.elementsEqual("bak".utf8)
        if (suffix.count == 6 && suffix.allSatisfy(isAlphanumeric)) || ((6...10).contains(suffix.count) && suffix.allSatisfy(isDigit))
            || goTemp || pythonTemp || gnuPatchTemp || backup {
            return .besideItsStem(String(decoding: bytes[..<dot], as: UTF8.self))
        }
        return nil
    }

    /// The namespace whose row file `name` would be, when that is not
    /// `namespace`'s and the name is no row here (`Ideas.md` or `X.ics` in
    /// `saga/`, `Plan.ics` in `contacts/`): nil in the notebook, which
    /// keeps any file, and for names of no namespace (`todo.txt`).
    static func foreignRowName(_ name: String, in namespace: Namespace) -> Namespace? {
        guard namespace != .notebook, case .localOnly = meaning(of: name, in: namespace) else { return nil }
        for home in [Namespace.notebook, .plans, .contacts] where name.utf8.count > fileExtension(home).utf8.count {
            if Array(name.utf8).suffix(fileExtension(home).utf8.count).elementsEqual(fileExtension(home).utf8) { return home }
        }
        return nil
    }

    /// What a name in a namespace folder stands for.
    enum Meaning: Equatable {
        /// A row; `title` is the display name the file name decodes to,
        /// `kind` a note or (in the notebook) an attachment.
        case row(title: String, kind: NoteKind = .note)
        /// Editor junk: a local scratch file, never a row, never reported.
        case junk
        /// Not a row name here (wrong extension, not a date): kept as a local
        /// scratch file so temp-file saves work, and listed in .quire/status.
        case localOnly
    }

    static func meaning(of name: String, in namespace: Namespace) -> Meaning {
        meaning(of: CanonicalName(name), in: namespace)
    }

    /// What a name stands for; the title of a row name is NFC.
    ///
    /// In the notebook (any folder of it): `NAME.md` is a note titled NAME;
    /// every other file is an attachment whose title is its whole name;
    /// hidden files (a leading dot) and editor junk stay on this device,
    /// and so do the `.rejected` and `.unsaved` files the mount keeps
    /// refused or unsaved text in (`isKeptText`). (Hidden folders are folders: see `folderTitle`.)
    static func meaning(of canonical: CanonicalName, in namespace: Namespace) -> Meaning {
        let name = canonical.text
        if isJunk(name) { return .junk }
        let ext = fileExtension(namespace)
        // The extension is matched and cut as bytes: a title ending in a
        // prepended-concatenation mark (U+06DD) makes one Character of the
        // mark and the extension's dot, and dropLast(3) cut the mark off
        // the title (found by tools/fuzz, mount-text).
        let bytes = Array(name.utf8), extBytes = Array(ext.utf8)
        guard bytes.count >= extBytes.count, bytes.suffix(extBytes.count).elementsEqual(extBytes),
              bytes.count > extBytes.count || namespace != .saga else {
            if namespace == .notebook && !isKeptText(name) {
                return .row(title: attachmentTitle(name), kind: .file)
            }
            return .localOnly
        }
        var base = String(decoding: bytes.dropLast(extBytes.count), as: UTF8.self)
        base = withoutMarker(base)
        if base.isEmpty { return .localOnly }   // ".md" is hidden (junk) anyway; "%~xxxx.md" has no title
        // An escape may decode to a letter that a following mark composes
        // with (`%3C` + U+0338 is `≮`): the title is normalized once more.
        let title = CanonicalName(unescape(base)).text
        if namespace == .saga && !SagaEntry.isValidDate(title) { return .localOnly }
        return .row(title: title, kind: .note)
    }

    /// A name the mount keeps text that could not be saved under, beside
    /// its file (`Commits.reject`, `keepUnsaved`): a note's or an
    /// attachment's, so every such name stays on this device.
    static func isKeptText(_ name: String) -> Bool { name.hasSuffix(".rejected") || name.hasSuffix(".unsaved") }

    /// `base` without a trailing `%~` key marker.
    private static func withoutMarker(_ base: String) -> String { splitMarker(base)?.base ?? base }

    /// `base` split before a trailing `%~` key marker, and the marker's hex key prefix.
    private static func splitMarker(_ base: String) -> (base: String, keyPrefix: String)? {
        guard let range = base.range(of: marker, options: .backwards) else { return nil }
        let tail = base[range.upperBound...]
        guard tail.utf8.count == 8 || tail.utf8.count == 32, tail.utf8.allSatisfy(isLowercaseHexDigit) else { return nil }
        return (String(base[..<range.lowerBound]), String(tail))
    }

    /// The hex key prefix a row name's `%~` marker carries (before a note's
    /// extension, or an attachment's), if it has one.
    static func markerKeyPrefix(of name: String, in namespace: Namespace) -> String? {
        let bytes = Array(name.utf8), ext = Array(fileExtension(namespace).utf8)
        let isNoteName = !ext.isEmpty && bytes.count > ext.count && bytes.suffix(ext.count).elementsEqual(ext)
        let base = isNoteName ? String(decoding: bytes.dropLast(ext.count), as: UTF8.self) : splitExtension(name).stem
        return splitMarker(base)?.keyPrefix
    }

    /// An attachment's title from its file name: the name itself, without
    /// a key marker (which goes before the extension).
    static func attachmentTitle(_ name: String) -> String {
        let (stem, ext) = splitExtension(name)
        let unmarked = withoutMarker(stem)
        return unmarked.isEmpty ? name : unmarked + ext
    }

    /// The title a new folder named `name` gets, or nil when the name is
    /// editor junk. Hidden names are folders like any other (`.obsidian`).
    static func folderTitle(_ name: CanonicalName) -> String? {
        let text = name.text
        if text.hasPrefix(".") {
            let rest = String(text.dropFirst())
            if rest.isEmpty || rest == "." || text == ".DS_Store" || rest.hasPrefix("#") || rest.hasPrefix("_") { return nil }
            return isJunk(rest) && !rest.hasPrefix(".") ? nil : text
        }
        return isJunk(text) ? nil : text
    }

    /// A name's stem and extension (`photo.jpg` is `photo`, `.jpg`).
    static func splitExtension(_ name: String) -> (stem: String, ext: String) { ConflictCopy.splitExtension(name) }

    /// An attachment's or folder's title as a name: as it is, but for what
    /// no file name may hold (`/`, NUL) and the names `.`, `..` and empty,
    /// which only a sibling could have sent.
    static func literalName(_ title: String) -> String {
        if title.isEmpty { return "%" }
        if title == "." || title == ".." { return String(repeating: "%2E", count: title.utf8.count) }
        var out = ""
        for scalar in title.unicodeScalars {
            switch scalar {
            case "/": out += "%2F"
            case "\0": out += "%00"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A row's plain name as a stem and an extension (a key marker goes
    /// between them when rows share the name).
    static func nameParts(namespace: Namespace, kind: NoteKind, title: String, updatedAt: Timestamp) -> (stem: String, ext: String) {
        switch kind {
        case .note: return (stem(namespace: namespace, title: title, updatedAt: updatedAt), fileExtension(namespace))
        case .folder: return (literalName(CanonicalName(title).text), "")
        case .file:
            let literal = literalName(CanonicalName(title).text)
            // An attachment whose name would not be one here (hidden, junk,
            // a note's): only a sibling's `quire put` makes one. It is shown
            // escaped and ending in `%`, which no such name does.
            if isJunk(literal) || literal.hasSuffix(".md") || isKeptText(literal) {
                return (escape(literal) + "%", "")
            }
            return splitExtension(literal)
        }
    }

    /// The untruncated, unmarked name stem of a row (before the extension),
    /// made from the NFC form of its title whatever form the title is stored in.
    static func stem(namespace: Namespace, title stored: String, updatedAt: Timestamp) -> String {
        let title = CanonicalName(stored).text
        switch namespace {
        case .saga: return title
        case .memory: return escape(TextDates.formatDateTime(updatedAt.seconds) + " " + title)
        default: return escape(title)
        }
    }

    /// The file name of one row of a group sharing `stem`. `isFirst`: the
    /// row keeps the plain name (no other row of the group sorts before it).
    static func name(stem: String, namespace: Namespace, key: RowKey, isFirst: Bool, longMarker: Bool = false) -> String {
        name(stem: stem, ext: fileExtension(namespace), key: key, isFirst: isFirst, longMarker: longMarker)
    }

    static func name(stem: String, ext: String, key: RowKey, isFirst: Bool, longMarker: Bool = false) -> String {
        if isFirst, stem.utf8.count + ext.utf8.count <= maximumNameBytes { return stem + ext }
        let tag = marker + String(key.hex.prefix(longMarker ? 32 : 8))
        let budget = maximumNameBytes - ext.utf8.count - tag.utf8.count
        return truncated(stem, toBytes: budget) + tag + ext
    }

    /// Cuts `text` to at most `limit` UTF-8 bytes without splitting a
    /// character or a %XX escape.
    static func truncated(_ text: String, toBytes limit: Int) -> String {
        if text.utf8.count <= limit { return text }
        var out = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > limit { break }
            out.append(character)
            used += size
        }
        // Never end inside "%XX": drop the partial escape.
        while let percent = out.lastIndex(of: "%"), out.distance(from: percent, to: out.endIndex) < 3 {
            out = String(out[..<percent])
        }
        // Nor inside the escapes of one character (an escaped combining
        // mark is two or three): drop the escapes of a cut UTF-8 sequence.
        return droppingCutEscapedSequence(out)
    }

    /// `text` without the trailing `%XX` escapes that start a UTF-8
    /// sequence they do not finish.
    private static func droppingCutEscapedSequence(_ text: String) -> String {
        var bytes = Array(text.utf8)
        var escaped: [UInt8] = []   // trailing escaped bytes, last first
        var end = bytes.count
        while end >= 3, bytes[end - 3] == UInt8(ascii: "%"),
              let high = upperHexDigit(bytes[end - 2]), let low = upperHexDigit(bytes[end - 1]) {
            escaped.append(high << 4 | low)
            end -= 3
        }
        // Walk back over continuation bytes to the lead byte of the last sequence.
        var continuations = 0
        for byte in escaped {
            if byte & 0xC0 == 0x80 { continuations += 1; continue }
            let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
            if continuations + 1 < length { bytes.removeLast(3 * (continuations + 1)) }
            return String(decoding: bytes, as: UTF8.self)
        }
        return text
    }

    private static func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }

    private static func isLowercaseHexDigit(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "f"))
    }
}
