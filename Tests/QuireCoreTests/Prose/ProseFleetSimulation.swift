import QuireCore

/// A fleet of 3 to 5 devices editing one body from a common start, sending
/// snapshots of their versions to each other, delivered late, out of order
/// and sometimes twice. Every step checks the merge's algebra on the pair it
/// touches; `finish()` gossips to a fixpoint and checks that no word was lost.
///
/// Every paragraph carries a fresh token (`n12`, `r13`), so each written
/// paragraph is unique and "present exactly once" is checkable.
struct ProseFleetSimulation {
    private(set) var devices: [ProseVersion]
    /// Identities of every paragraph any device ever wrote, start included.
    private(set) var written: Set<ParagraphHash> = []
    /// Identities the simulated users deliberately deleted or rewrote: the
    /// only tombstones that may exist.
    private(set) var intendedTombstones: Set<ParagraphHash> = []
    private(set) var failures: [String] = []
    private(set) var associativeOrders = 0
    private(set) var associativityChecks = 0
    private var random: ProseSeededRandom
    private var inFlight: [(to: Int, version: ProseVersion)] = []
    private var serial = 0
    /// Whether users type deleted paragraphs again, byte for byte (an undo,
    /// a to-do line unticked), and the texts they may type again.
    private let retypes: Bool
    private var removedTexts: [String] = []
    /// Identities typed again at least once: their fate depends on what
    /// each typist and deleter had seen, so only the algebra is checked.
    private(set) var retyped: Set<ParagraphHash> = []

    private static let vocabulary = """
        the a river morning coffee rain we walked talked slept wrote letter mother garden bread \
        train late early quiet window book chapter friend dinner snow light city field long short \
        called laughed found lost kept old new blue small warm cold after before again never
        """.split(separator: " ").map(String.init)

    init(seed: UInt64, retypes: Bool = false) {
        self.retypes = retypes
        random = ProseSeededRandom(seed: seed)
        devices = []
        let deviceCount = 3 + random.below(3)
        var start: [String] = []
        for _ in 0..<(1 + random.below(4)) { start.append(newParagraph()) }
        devices = Array(repeating: ProseVersion(text: Paragraphs.join(start)), count: deviceCount)
    }

    mutating func run(steps: Int) {
        for _ in 0..<steps where failures.isEmpty {
            switch random.below(20) {
            case 0..<6: edit(device: random.below(devices.count), slow: false)
            case 6..<9: edit(device: random.below(devices.count), slow: true)
            case 9..<13: send()
            default: deliverOne()
            }
        }
    }

    /// Delivers what is still in flight, then gossips all pairs in rounds
    /// until a round changes nothing, and checks the outcome.
    mutating func finish() {
        while !inFlight.isEmpty && failures.isEmpty { deliverOne() }
        let beforeGossip = devices
        var rounds = 0
        var changed = true
        while changed && rounds < 10 {
            changed = false
            rounds += 1
            for from in devices.indices {
                for to in devices.indices where to != from {
                    let merged = ProseMerge.merge(devices[to], devices[from])
                    if merged != devices[to] { changed = true }
                    devices[to] = merged
                }
            }
        }
        // Round 1 spreads the join of all multisets; round 2 the byte-greatest
        // order; round 3 finds nothing left to change.
        check(rounds <= 3, "gossip took \(rounds) rounds")
        let first = devices[0]
        for device in devices.dropFirst() {
            check(device == first, "devices differ after gossip:\n\(device.text)---\n\(first.text)")
        }
        checkNothingLost(first)

        // Another schedule (random pairs, then all pairs until quiet)
        // reaches the same paragraphs; its order may differ.
        var other = beforeGossip
        for _ in 0..<(other.count * 3) {
            let from = random.below(other.count)
            let to = random.below(other.count)
            other[to] = ProseMerge.merge(other[to], other[from])
        }
        var quiet = false
        for _ in 0..<10 where !quiet {
            quiet = true
            for from in other.indices {
                for to in other.indices where to != from {
                    let merged = ProseMerge.merge(other[to], other[from])
                    if merged != other[to] { quiet = false }
                    other[to] = merged
                }
            }
        }
        check(quiet, "a random gossip schedule did not settle")
        let firstCounts = multiset(first)
        for device in other {
            let same = multiset(device) == firstCounts && device.deletedParagraphs == first.deletedParagraphs
            check(same, "a random gossip schedule reached other paragraphs")
        }
    }

    // MARK: - Steps

    private mutating func edit(device d: Int, slow: Bool) {
        let shown = devices[d]
        var paragraphs = shown.paragraphs
        let choice = paragraphs.isEmpty ? 0 : random.below(10)
        switch choice {
        case 0..<3:
            paragraphs.append(newParagraph())
        case 3..<5:
            paragraphs.insert(newParagraph(), at: random.below(paragraphs.count + 1))
        case 5..<8:
            let i = random.below(paragraphs.count)
            intendedTombstones.insert(Paragraphs.paragraphHash(paragraphs[i]))
            removedTexts.append(paragraphs[i])
            paragraphs[i] = rewrite(paragraphs[i])
        default:
            if retypes, !removedTexts.isEmpty, random.chance(percent: 50) {
                let again = random.element(of: removedTexts)
                if !paragraphs.contains(again) {
                    retyped.insert(Paragraphs.paragraphHash(again))
                    paragraphs.insert(again, at: random.below(paragraphs.count + 1))
                }
            } else {
                let removed = paragraphs.remove(at: random.below(paragraphs.count))
                intendedTombstones.insert(Paragraphs.paragraphHash(removed))
                removedTexts.append(removed)
            }
        }
        let edited = render(paragraphs)
        if slow, let index = inFlight.firstIndex(where: { $0.to == d }) {
            // A sync import lands under the editor before the save.
            let message = inFlight.remove(at: index)
            devices[d] = ProseMerge.merge(devices[d], message.version)
        }
        devices[d] = ProseMerge.applyEdit(shown: shown.text, edited: edited, onto: devices[d])
        let saved = devices[d]
        check(ProseMerge.merge(saved, saved) == saved, "an edit's result is not normalized")
    }

    private mutating func send() {
        let from = random.below(devices.count)
        var to = random.below(devices.count - 1)
        if to >= from { to += 1 }
        inFlight.append((to, devices[from]))
        if random.chance(percent: 20) { inFlight.append((to, devices[from])) }
    }

    private mutating func deliverOne() {
        guard !inFlight.isEmpty else { return }
        let index = random.below(inFlight.count)
        let message = random.chance(percent: 10) ? inFlight[index] : inFlight.remove(at: index)
        let local = devices[message.to]
        let merged = checkAlgebra(local, message.version)
        devices[message.to] = merged
        if random.chance(percent: 30) {
            checkAssociativity(local, message.version, devices[random.below(devices.count)])
        }
    }

    // MARK: - Checks

    private mutating func checkAlgebra(_ a: ProseVersion, _ b: ProseVersion) -> ProseVersion {
        let ab = ProseMerge.merge(a, b)
        check(ab == ProseMerge.merge(b, a), "not commutative:\nA:\n\(a.text)\nB:\n\(b.text)")
        check(ProseMerge.merge(a, a) == a, "merge(a, a) != a")
        check(ProseMerge.merge(ab, b) == ab, "merge(merge(a, b), b) != merge(a, b)")
        return ab
    }

    private mutating func checkAssociativity(_ a: ProseVersion, _ b: ProseVersion, _ c: ProseVersion) {
        let left = ProseMerge.merge(ProseMerge.merge(a, b), c)
        let right = ProseMerge.merge(a, ProseMerge.merge(b, c))
        let sameSet = multiset(left) == multiset(right) && left.deletedParagraphs == right.deletedParagraphs
        check(sameSet, "the paragraph set is not associative")
        associativityChecks += 1
        if left == right { associativeOrders += 1 }
    }

    private mutating func checkNothingLost(_ final: ProseVersion) {
        if retypes {
            // Paragraphs nobody deleted, rewrote or typed again are there once.
            let actual = multiset(final)
            let settled = written.subtracting(intendedTombstones).subtracting(retyped)
            check(settled.allSatisfy { actual[$0] == 1 }, "lost or doubled a paragraph nobody deleted or typed again")
            check(actual.keys.allSatisfy { written.contains($0) }, "a paragraph nobody wrote")
            return
        }
        let tombstones = final.deletedParagraphs
        let intended = intendedTombstones
        let falseOnes = tombstones.subtracting(intended).count
        let missing = intended.subtracting(tombstones).count
        check(falseOnes == 0 && missing == 0, "\(falseOnes) false tombstone(s), \(missing) lost")
        var expected: [ParagraphHash: Int] = [:]
        for id in written where !intendedTombstones.contains(id) { expected[id] = 1 }
        let actual = multiset(final)
        let lost = expected.keys.filter { actual[$0] == nil }
        let extra = actual.filter { expected[$0.key] != $0.value }
        check(lost.isEmpty, "lost \(lost.count) paragraph(s) nobody deleted or rewrote")
        check(extra.isEmpty, "\(extra.count) paragraph(s) deleted, rewritten or doubled came back")
    }

    private func multiset(_ version: ProseVersion) -> [ParagraphHash: Int] {
        var counts: [ParagraphHash: Int] = [:]
        for p in version.paragraphs { counts[Paragraphs.paragraphHash(p), default: 0] += 1 }
        return counts
    }

    private mutating func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { failures.append(message()) }
    }

    // MARK: - Text

    private mutating func newParagraph() -> String {
        serial += 1
        var words: [String] = []
        for _ in 0..<(4 + random.below(9)) { words.append(random.element(of: Self.vocabulary)) }
        words.insert("n\(serial)", at: random.below(words.count + 1))
        var text = words.joined(separator: " ")
        if random.chance(percent: 20) {
            // A single newline inside the paragraph is part of it.
            text = text.replacingFirstSpace(with: "\n")
        }
        let paragraph = text + "."
        written.insert(Paragraphs.paragraphHash(paragraph))
        return paragraph
    }

    /// Adds or changes a few words; the fresh token keeps it unique.
    private mutating func rewrite(_ paragraph: String) -> String {
        serial += 1
        var revised: String
        if random.chance(percent: 50) {
            revised = paragraph + " And " + random.element(of: Self.vocabulary) + " r\(serial)."
        } else {
            var words = paragraph.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            words[random.below(words.count)] = "r\(serial)"
            if words.count > 3 { words[random.below(words.count)] = random.element(of: Self.vocabulary) }
            revised = words.joined(separator: " ")
        }
        written.insert(Paragraphs.paragraphHash(revised))
        return revised
    }

    /// What an editor might save: canonical, Windows line endings, extra
    /// blank or whitespace-only lines, no final newline.
    private mutating func render(_ paragraphs: [String]) -> String {
        switch random.below(4) {
        case 0: return Paragraphs.join(paragraphs)
        case 1: return paragraphs.joined(separator: "\r\n\r\n").replacingNewlines(with: "\r\n")
        case 2: return "\n \n" + paragraphs.joined(separator: "\n\t\n\n") + "\n\n"
        default: return paragraphs.joined(separator: "\n\n")
        }
    }
}

private extension String {
    func replacingFirstSpace(with replacement: String) -> String {
        guard let index = firstIndex(of: " ") else { return self }
        return String(self[..<index]) + replacement + String(self[self.index(after: index)...])
    }

    /// Lone "\n" inside paragraphs becomes `newline` (a CRLF file).
    func replacingNewlines(with newline: String) -> String {
        var out = ""
        var previous: Character?
        for ch in self {
            if ch == "\n" && previous != "\r" { out += newline } else { out.append(ch) }
            previous = ch
        }
        return out
    }
}
