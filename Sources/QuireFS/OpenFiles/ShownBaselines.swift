import QuireCore

/// What this device last showed of each prose row and card: the baseline a
/// save's paragraph deletions are counted against (issue: no word lost),
/// and the text a card written back whole is rebased from (`CardRebase`).
///
/// Kept for the device (the bytes any open last read, or the last write)
/// and for each process: an editor that read a note and saves it later was
/// shown what it read, not what an indexer or a file manager read in
/// between, after a sibling's paragraphs landed (those would be counted as
/// the editor's deletions). A save by a process with no baseline of its own
/// falls back to the device's.
///
/// Bounded: a mount that `cat`s 10,000 notes must not keep 10,000 bodies.
/// One process holds at most `perProcess` of the texts, so an indexer
/// reading every note evicts its own baselines, not an editor's. For every
/// row, though, the version last shown is kept (a number a row): with no
/// text kept, the stored text is the baseline only if it is that version
/// (`showed`); a version nobody here was shown deletes nothing.
struct ShownBaselines {
    static let capacity = 256
    static let perProcess = 64
    /// A text kept is at most this long. Baselines are of prose and cards;
    /// an attachment's bytes (a photo read by every viewer, a 15 MB file
    /// rewritten again and again) are no baseline of anything, and kept
    /// for every process that read them they held hundreds of megabytes.
    /// Past it, or not UTF-8, only the version shown is kept.
    static let maxTextBytes = 1 << 20
    private var device = BoundedTexts<RowRef>(capacity: capacity)
    private var processes = ProcessTexts(capacity: capacity, perProcess: perProcess)
    /// The change number of the version of each row last shown whole (-1: unknown).
    private var versions: [RowRef: Int64] = [:]
    /// The store's change number when the mount started: a row unchanged
    /// since was there to be read, as if shown.
    let startSequence: Int64

    init(startSequence: Int64 = 0) { self.startSequence = startSequence }

    /// The device's baseline (set: a text of no known version).
    subscript(ref: RowRef) -> [UInt8]? {
        get { device[ref] }
        set {
            guard Self.keeps(ref) else { return }
            device[ref] = newValue.flatMap { Self.keepsText($0) ? $0 : nil }
            versions[ref] = -1
        }
    }

    /// Whether `version` of `ref` is the one this device last showed (or
    /// was there unchanged when the mount started and nothing was shown since).
    func showed(_ ref: RowRef, version: Int64) -> Bool {
        if let shown = versions[ref] { return shown == version }
        return version <= startSequence
    }

    /// The baseline of a save by `process` (nil: unknown).
    func baseline(_ ref: RowRef, process: Int32?) -> [UInt8]? {
        if let process, let own = processes.text(ref, process: process) { return own }
        return device[ref]
    }

    /// How a save wrote its text.
    enum Writing {
        /// Onto the text it had (appends, writes at an offset).
        case onto
        /// Whole (a shell's `>`, git checking a file out, an editor's save,
        /// a save by rename) over `shown`, what the writer was shown
        /// (nil: unknown).
        case whole(over: [UInt8]?)
    }

    /// `process` was shown `text` (it read it, or wrote it), and so was the
    /// device; `version`: the stored version that is exactly this text, if one is.
    ///
    /// A text written whole by a program here counts as shown to the other
    /// programs here too, as far as that program typed it (its paragraphs
    /// that were not in what it was shown): the person at this device wrote
    /// them, and a later `echo new > note.md` from a shell that wrote the
    /// note long ago must not keep them as if a sibling's paragraphs it was
    /// never shown. A sibling's paragraph stays unshown to them, so it is
    /// still kept at their saves (no word lost). Cards, rebased field by
    /// field from a whole baseline, drop the other programs' baselines.
    mutating func record(_ ref: RowRef, _ text: [UInt8], process: Int32?, version: Int64?, writing: Writing = .onto) {
        guard Self.keeps(ref) else { return }
        if case .whole(let shown) = writing {
            if ref.namespace == .notebook || ref.namespace == .saga {
                var typed: String? = nil
                processes.modifyAll(ref, except: process) { other in
                    if typed == nil { typed = Self.typed(text, over: shown ?? []) }
                    guard let typed, !typed.isEmpty else { return other }
                    return Array(Paragraphs.union(String(decoding: other, as: UTF8.self), typed).utf8)
                }
            } else {
                processes.removeAll(ref, except: process)
            }
        }
        guard Self.keepsText(text) else {
            // The version alone: the stored text is the baseline while it is that one.
            device[ref] = nil
            if let process { processes.remove(ref, process: process) }
            versions[ref] = version ?? -1
            return
        }
        device[ref] = text
        if let process { processes.set(ref, text, process: process) }
        versions[ref] = version ?? -1
    }

    /// The paragraphs of `text` that are not in `shown`, as a text.
    private static func typed(_ text: [UInt8], over shown: [UInt8]) -> String {
        let before = Paragraphs.hashes(of: String(decoding: shown, as: UTF8.self))
        return Paragraphs.join(Paragraphs.split(String(decoding: text, as: UTF8.self)).filter { !before.contains(Paragraphs.paragraphHash($0)) })
    }

    /// Prose, and the cards programs read and write back whole (`CardRebase`).
    private static func keeps(_ ref: RowRef) -> Bool { [.notebook, .saga, .contacts, .plans].contains(ref.namespace) }

    private static func keepsText(_ text: [UInt8]) -> Bool {
        text.count <= maxTextBytes && String(validating: text, as: UTF8.self) != nil
    }
}

/// Texts of rows by process: at most `perProcess` for one process (the
/// one it was shown longest ago dropped first), `capacity` in all. Past
/// that, the texts of processes that have ended go first (a shell loop's
/// thousand `grep`s save nothing), then the least recent of the process
/// holding the most (of equals, the one shown anything longest ago).
struct ProcessTexts {
    let capacity: Int
    let perProcess: Int
    /// Whether a process still runs.
    let isRunning: (Int32) -> Bool
    private var byProcess: [Int32: BoundedTexts<RowRef>] = [:]
    private var lastShown: [Int32: UInt64] = [:]
    private var clock: UInt64 = 0
    private(set) var count = 0

    init(capacity: Int, perProcess: Int, isRunning: @escaping (Int32) -> Bool = ProcessGroups.isRunning) {
        self.capacity = capacity
        self.perProcess = perProcess
        self.isRunning = isRunning
    }

    func text(_ ref: RowRef, process: Int32) -> [UInt8]? { byProcess[process]?[ref] }

    mutating func remove(_ ref: RowRef, process: Int32) {
        guard byProcess[process]?[ref] != nil, var texts = byProcess.removeValue(forKey: process) else { return }
        count -= texts.count
        texts[ref] = nil
        count += texts.count
        if texts.count > 0 { byProcess[process] = texts } else { lastShown[process] = nil }
    }

    /// Changes every process's text of `ref` but `kept`'s.
    mutating func modifyAll(_ ref: RowRef, except kept: Int32?, _ change: ([UInt8]) -> [UInt8]) {
        for process in byProcess.keys where process != kept {
            guard let text = byProcess[process]?[ref] else { continue }
            let changed = change(text)
            if changed != text { byProcess[process]?[ref] = changed }
        }
    }

    /// Drops every process's text of `ref` but `kept`'s.
    mutating func removeAll(_ ref: RowRef, except kept: Int32?) {
        for process in byProcess.keys where process != kept && byProcess[process]?[ref] != nil { remove(ref, process: process) }
    }

    mutating func set(_ ref: RowRef, _ text: [UInt8], process: Int32) {
        var texts = byProcess.removeValue(forKey: process) ?? BoundedTexts<RowRef>(capacity: perProcess)
        count -= texts.count
        texts[ref] = text
        count += texts.count
        byProcess[process] = texts
        clock += 1
        lastShown[process] = clock
        if count > capacity {
            for (ended, texts) in byProcess where ended != process && !isRunning(ended) {
                byProcess[ended] = nil
                lastShown[ended] = nil
                count -= texts.count
            }
        }
        while count > capacity, let largest = byProcess.max(by: { a, b in
            a.value.count != b.value.count ? a.value.count < b.value.count : lastShown[a.key, default: 0] > lastShown[b.key, default: 0]
        })?.key {
            var evicting = byProcess.removeValue(forKey: largest)!
            count -= evicting.count
            evicting.removeOldest()
            count += evicting.count
            if evicting.count > 0 { byProcess[largest] = evicting } else { lastShown[largest] = nil }
        }
    }
}

/// Texts by key, the least recently shown dropped past `capacity`: an
/// editor's note it saves all day stays while notes it glanced at go.
struct BoundedTexts<Key: Hashable> {
    let capacity: Int
    /// Each text with the stamp of its place in `order`.
    private var texts: [Key: (text: [UInt8], stamp: UInt64)] = [:]
    private var order = RecencyOrder<Key>()

    init(capacity: Int) { self.capacity = capacity }

    var count: Int { texts.count }
    /// Entries in the eviction order, stale ones included (tests).
    var queued: Int { order.queued }

    mutating func removeOldest() {
        // The table is read through a second reference only inside the
        // block: it is unique again when an entry is removed (no copy).
        let oldest: Key?
        do { let held = texts; oldest = order.removeOldest { held[$0]?.stamp == $1 } }
        if let oldest { texts[oldest] = nil }
    }

    subscript(key: Key) -> [UInt8]? {
        get { texts[key]?.text }
        set {
            guard let newValue else { texts[key] = nil; return }
            let stamp: UInt64
            do { let held = texts; stamp = order.touch(key, live: held.count) { held[$0]?.stamp == $1 } }
            texts[key] = (newValue, stamp)
            while texts.count > capacity { removeOldest() }
        }
    }
}
