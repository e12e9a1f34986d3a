/// Lines another writer appended to a paragraph that a local edit rewrote
/// meanwhile: a log note one program appends to (`echo … >> log.md`)
/// while an editor, which read it before, saves its own rewrite of the
/// same paragraph. Both are one paragraph that changed two ways, which the
/// merge keeps twice (every word kept); when one side only added lines at
/// the end, the rewrite plus those lines holds every word of both, once.
/// Local saves only (`ProseMerge.applyEdit`): what a sibling appended
/// reaches the merge of versions, which keeps both as ever.
enum AppendedLines {
    /// `edited` with the lines `record` appended to a paragraph of `shown`
    /// put after that paragraph's rewrite, and the identities of the
    /// appended-to paragraphs, superseded by the result.
    static func fold(shown: String, edited: String, record: String) -> (edited: String, superseded: Set<ParagraphHash>) {
        let before = Paragraphs.parse(shown), after = Paragraphs.parse(edited), current = Paragraphs.parse(record)
        let beforeIDs = Set(before.map(\.hash)), afterIDs = Set(after.map(\.hash)), currentIDs = Set(current.map(\.hash))
        // Rewritten by this edit and appended to elsewhere: gone from both texts.
        var originals = before.filter { !afterIDs.contains($0.hash) && !currentIDs.contains($0.hash) }
        guard !originals.isEmpty else { return (edited, []) }
        var texts = after.map(\.text)
        var available = after.indices.filter { !beforeIDs.contains(after[$0].hash) }
        var superseded = Set<ParagraphHash>()
        for appended in current where !beforeIDs.contains(appended.hash) && !afterIDs.contains(appended.hash) {
            let lines = appended.text.split(separator: "\n", omittingEmptySubsequences: false)
            guard let o = originals.firstIndex(where: { original in
                let base = original.text.split(separator: "\n", omittingEmptySubsequences: false)
                return lines.count > base.count && lines.starts(with: base)
            }) else { continue }
            let original = originals[o]
            guard let slot = available.firstIndex(where: { isRewrite(of: original.text, after[$0].text) }) else { continue }
            let index = available.remove(at: slot)
            originals.remove(at: o)
            let base = original.text.split(separator: "\n", omittingEmptySubsequences: false).count
            texts[index] += "\n" + lines.dropFirst(base).joined(separator: "\n")
            superseded.insert(appended.hash)
        }
        return superseded.isEmpty ? (edited, []) : (Paragraphs.join(texts), superseded)
    }

    /// A paragraph's rewrite: a revision by words, or (lines, as in a log)
    /// one that keeps at least half of its lines.
    private static func isRewrite(of original: String, _ candidate: String) -> Bool {
        if ParagraphRevision.areRevisions(original, candidate) { return true }
        let lines = original.split(separator: "\n", omittingEmptySubsequences: false)
        let kept = Set(candidate.split(separator: "\n", omittingEmptySubsequences: false))
        return lines.count >= 2 && lines.filter(kept.contains).count * 2 >= lines.count
    }
}

/// One paragraph appended to on two devices at once (`echo … >> log.md` on
/// both): each device's version is the original plus its own lines, the
/// original tombstoned by both, and the version merge keeps both versions
/// whole (every word kept). Left so, every later round of appends would
/// copy the whole paragraph again. A local save joins such neighbours into
/// one: the shared lines once, then the first one's added lines, then the
/// second's (the one the writer appended to goes last, as it was typed
/// last). Only paragraphs the edit was shown or found stored (a program
/// appending with `>>` reads nothing), as they were or with lines added at
/// their end, are joined, so nothing the writer typed moves; and only where
/// a tombstoned paragraph begins both (one origin, rewritten twice), never
/// two paragraphs that merely start alike.
enum SplitAppends {
    static func join(shown: String, record: String, edited: String, tombstones: ParagraphTombstones) -> String {
        guard !tombstones.isEmpty else { return edited }
        var texts = Paragraphs.parse(edited).map(\.text)
        // Most saves have no neighbours that begin with the same line: they
        // pay for that check alone, not for digesting the texts below.
        guard texts.count >= 2, zip(texts, texts.dropFirst()).contains(where: { firstLine($0) == firstLine($1) }) else { return edited }
        let before = Paragraphs.parse(shown) + Paragraphs.parse(record)
        let knownIDs = Set(before.map(\.hash))
        let editedIDs = Set(texts.map(ParagraphHash.init(paragraph:)))
        // Known paragraphs the edit appended to (gone as they were).
        let appendedTo = before.filter { !editedIDs.contains($0.hash) }.map { lines($0.text) }
        func wasKnown(_ text: String) -> Bool {
            if knownIDs.contains(ParagraphHash(paragraph: text)) { return true }
            let these = lines(text)
            return appendedTo.contains { these.count > $0.count && these.starts(with: $0) }
        }
        // A join of two known paragraphs is known too, so a third version
        // (three devices appended at once) joins it in turn; judged by its
        // text, it matched nothing, stayed beside it and was copied again
        // every round.
        var known = texts.map(wasKnown)
        var joined = false
        var i = 0
        while i + 1 < texts.count {
            let first = lines(texts[i]), second = lines(texts[i + 1])
            let shared = zip(first, second).prefix { $0 == $1 }.count
            guard shared > 0, first != second, known[i], known[i + 1],
                  (1...shared).reversed().contains(where: { tombstones.isDeleted(ParagraphHash(paragraph: first[..<$0].joined(separator: "\n"))) })
            else { i += 1; continue }
            texts[i] = (first + second[shared...]).joined(separator: "\n")
            texts.remove(at: i + 1)
            known.remove(at: i + 1)
            joined = true
        }
        return joined ? Paragraphs.join(texts) : edited
    }

    private static func firstLine(_ text: String) -> Substring {
        text.prefix { $0 != "\n" }
    }

    private static func lines(_ text: String) -> [Substring] {
        text.split(separator: "\n", omittingEmptySubsequences: false)
    }
}
