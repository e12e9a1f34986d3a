/// A small command-line parser in the conventions users expect:
/// `--name value`, `--name=value`, boolean `--flag`, `-h/--help`, `--` ends
/// options. Each command declares which options take a value.
struct Arguments {
    var positional: [String] = []
    var values: [String: [String]] = [:]
    var flags: Set<String> = []

    init(_ args: [String], valued: Set<String>, flags allowed: Set<String>) throws(UsageError) {
        var i = 0
        var onlyPositional = false
        while i < args.count {
            let a = args[i]
            i += 1
            if onlyPositional || !a.hasPrefix("-") || a == "-" {
                positional.append(a)
                continue
            }
            if a == "--" { onlyPositional = true; continue }
            if a == "-h" || a == "--help" { flags.insert("help"); continue }
            guard a.hasPrefix("--") else {
                // Short flags: declared as single letters in `allowed`/`valued`.
                let name = String(a.dropFirst())
                if valued.contains(name) {
                    guard i < args.count else { throw UsageError("option -\(name) needs a value") }
                    values[name, default: []].append(args[i]); i += 1
                } else if allowed.contains(name) {
                    flags.insert(name)
                } else {
                    throw UsageError("unknown option \(a)")
                }
                continue
            }
            var name = String(a.dropFirst(2))
            var inline: String? = nil
            if let eq = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if valued.contains(name) {
                if let inline { values[name, default: []].append(inline); continue }
                guard i < args.count else { throw UsageError("option --\(name) needs a value") }
                values[name, default: []].append(args[i])
                i += 1
            } else if allowed.contains(name) {
                guard inline == nil else { throw UsageError("option --\(name) takes no value") }
                flags.insert(name)
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }

    func expectPositional(_ range: ClosedRange<Int>, _ what: String) throws(UsageError) {
        guard range.contains(positional.count) else {
            throw UsageError(positional.count < range.lowerBound ? "missing \(what)" : "unexpected argument '\(positional[range.upperBound])'")
        }
    }
}

/// A mistake in how the command was called: exit status 2.
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// A failure to do what was asked: exit status 1, one line on stderr.
struct CommandFailure: Error {
    let message: String
    /// The exit status: 1, or another a command documents in its help.
    let status: Int32
    init(_ message: String, status: Int32 = 1) { self.message = message; self.status = status }
}
