/// The rules of one `.quireignore` file (gitignore syntax): which paths
/// under its folder stay on this device only, like Syncthing's `.stignore`.
///
/// - blank lines and lines starting with `#` are skipped; `\#` and `\!`
///   start a pattern with that character; trailing spaces are cut;
/// - `!pattern` takes a path back that an earlier pattern ignored;
/// - `pattern/` matches folders only (and so everything in them);
/// - a pattern with a `/` at its start or in its middle is matched against
///   the path from the ignore file's folder; one without is matched
///   against the name, at any depth;
/// - `*` and `?` never match `/`; `**` matches any number of folders
///   (`**/x`, `x/**`, `a/**/b`); `[abc]`, `[a-z]` and `[!a]` are classes.
///
/// The last pattern that matches decides. As in git, a path inside an
/// ignored folder cannot be taken back by a later `!` pattern.
struct IgnoreRules: Equatable, Sendable {
    struct Rule: Equatable, Sendable {
        var pattern: [UInt8]
        var negated: Bool
        var foldersOnly: Bool
        var anchored: Bool
    }

    private(set) var rules: [Rule] = []

    init(_ text: [UInt8]) {
        for rawLine in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            var line = Array(rawLine)
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            while line.last == UInt8(ascii: " "), line.count >= 2, line[line.count - 2] != UInt8(ascii: "\\") { line.removeLast() }
            if line.last == UInt8(ascii: " ") && line.count == 1 { continue }
            guard let first = line.first, first != UInt8(ascii: "#") else { continue }
            var rule = Rule(pattern: line, negated: false, foldersOnly: false, anchored: false)
            if first == UInt8(ascii: "!") {
                rule.negated = true
                rule.pattern.removeFirst()
            } else if first == UInt8(ascii: "\\"), line.count > 1, line[1] == UInt8(ascii: "#") || line[1] == UInt8(ascii: "!") {
                rule.pattern.removeFirst()
            }
            if rule.pattern.last == UInt8(ascii: "/") {
                rule.foldersOnly = true
                rule.pattern.removeLast()
            }
            if rule.pattern.first == UInt8(ascii: "/") {
                rule.anchored = true
                rule.pattern.removeFirst()
            } else if rule.pattern.contains(UInt8(ascii: "/")) {
                rule.anchored = true
            }
            if !rule.pattern.isEmpty { rules.append(rule) }
        }
    }

    var isEmpty: Bool { rules.isEmpty }

    /// What these rules say of `path` (components from the ignore file's
    /// folder): true ignored, false taken back, nil no rule matched.
    func verdict(_ path: [String], isFolder: Bool) -> Bool? {
        let joined = Array(path.joined(separator: "/").utf8)
        let name = Array((path.last ?? "").utf8)
        var verdict: Bool? = nil
        for rule in rules where !rule.foldersOnly || isFolder {
            let matches = rule.anchored ? Self.glob(rule.pattern[...], joined[...]) : Self.glob(rule.pattern[...], name[...])
            if matches { verdict = !rule.negated }
        }
        return verdict
    }

    /// gitignore's glob: `*` and `?` stay within a component, `**` spans them.
    static func glob(_ pattern: ArraySlice<UInt8>, _ text: ArraySlice<UInt8>) -> Bool {
        var p = pattern.startIndex, t = text.startIndex
        // Backtracking point for the last single `*` (cannot cross `/`).
        var starP: Int? = nil, starT = 0
        let slash = UInt8(ascii: "/"), star = UInt8(ascii: "*")
        while t < text.endIndex || p < pattern.endIndex {
            if p < pattern.endIndex {
                let c = pattern[p]
                if c == star, p + 1 < pattern.endIndex, pattern[p + 1] == star {
                    // `**`: `**/` matches zero or more whole folders; a final `**` everything.
                    var rest = p + 2
                    if rest < pattern.endIndex, pattern[rest] == slash { rest += 1 }
                    if rest == pattern.endIndex { return true }
                    var from = t
                    while true {
                        if glob(pattern[rest...], text[from...]) { return true }
                        guard let next = text[from...].firstIndex(of: slash) else { return false }
                        from = next + 1
                    }
                }
                if c == star {
                    starP = p
                    starT = t
                    p += 1
                    continue
                }
                if t < text.endIndex, let consumed = matchOne(pattern, p, text[t]) {
                    p = consumed
                    t += 1
                    continue
                }
            }
            // Mismatch: let the last `*` take one more character, not a `/`.
            if let sp = starP, starT < text.endIndex, text[starT] != slash {
                starT += 1
                t = starT
                p = sp + 1
                continue
            }
            return false
        }
        return true
    }

    /// Matches one text byte against the pattern at `p` (`?`, a class, an
    /// escape or a literal); returns where the pattern goes on, or nil.
    private static func matchOne(_ pattern: ArraySlice<UInt8>, _ p: Int, _ c: UInt8) -> Int? {
        let slash = UInt8(ascii: "/")
        switch pattern[p] {
        case UInt8(ascii: "?"):
            return c == slash ? nil : p + 1
        case UInt8(ascii: "["):
            var i = p + 1
            var negate = false
            if i < pattern.endIndex, pattern[i] == UInt8(ascii: "!") || pattern[i] == UInt8(ascii: "^") { negate = true; i += 1 }
            var matched = false
            var first = true
            while i < pattern.endIndex, pattern[i] != UInt8(ascii: "]") || first {
                first = false
                let low = pattern[i]
                if i + 2 < pattern.endIndex, pattern[i + 1] == UInt8(ascii: "-"), pattern[i + 2] != UInt8(ascii: "]") {
                    if low <= c && c <= pattern[i + 2] { matched = true }
                    i += 3
                } else {
                    if low == c { matched = true }
                    i += 1
                }
            }
            guard i < pattern.endIndex else { return c == UInt8(ascii: "[") ? p + 1 : nil }   // no `]`: a literal `[`
            return matched != negate && c != slash ? i + 1 : nil
        case UInt8(ascii: "\\") where p + 1 < pattern.endIndex:
            return pattern[p + 1] == c ? p + 2 : nil
        default:
            return pattern[p] == c ? p + 1 : nil
        }
    }
}
