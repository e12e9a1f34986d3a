import Foundation
import QuireCore
import QuireCrypto
import QuireStore
import QuireSync

enum InviteCommand {
    static let command = Command(
        name: "invite",
        summary: "make an invite so another device can join this account",
        usage: """
            usage: quire invite [--passphrase-file F | --passphrase-words] [--out FILE]
                                [--kdf moderate|interactive] [--expires HOURS]

            Prints (or writes to FILE, mode 0600) an invite another device joins
            with. It carries no key of the account: a one-time pairing key, the
            public statements of the device log, the relay and cloud settings.
            This device records a grant for the pairing key in the device log;
            the new device signs its enrolment with it, and the first device of
            the account that hears the enrolment (this one, or any sibling that
            synced the grant) checks it is unused and unexpired by its own clock,
            then admits the new device. A second device joining with the same
            invite is refused. The invite is sealed with a key derived from a
            passphrase (Argon2id); pass the invite and the passphrase to the new
            device by different routes. On the new device:
                quire --home DIR init --join INVITE-OR-FILE --name NAME

            The passphrase (12 characters or more, not a repeated pattern) is:
              --passphrase-words    made here: five random pronounceable words
                                    (about 60 bits), printed on standard error
              --passphrase-file F   the first line of F
              QUIRE_PASSPHRASE      the environment (for scripts; removed from
                                    quire's environment once read)
              the terminal          asked twice, not echoed
            Options:
              --out FILE     write the invite to FILE instead of standard output
              --kdf K        key-derivation cost: moderate (default: Argon2id,
                             3 passes over 256 MiB) or interactive (2 passes over
                             64 MiB, faster on small machines)
              --expires H    hours until the invite expires (default 168, 7 days)
            """,
        valued: ["passphrase-file", "out", "kdf", "expires"], flags: ["passphrase-words"]
    ) { args, inv in
        try args.expectPositional(0...0, "")
        let strength: PasswordHash.Strength
        switch args.value("kdf") ?? "moderate" {
        case "moderate": strength = .moderate
        case "interactive": strength = .interactive
        case let other: throw UsageError("--kdf is moderate or interactive, not '\(other)'")
        }
        var lifetime = Invite.lifetimeSeconds
        if let h = args.value("expires") {
            guard let hours = Int64(h), hours > 0, hours <= 24 * 30 else { throw UsageError("--expires takes 1 to 720 hours, not '\(h)'") }
            lifetime = hours * 3600
        }
        let (identity, store) = try inv.open()
        let prefs = try inv.home.prefs.load()
        let passphrase: String
        if args.has("passphrase-words") {
            passphrase = Passphrase.makeWords()
            try? FileHandle.standardError.write(contentsOf: Data("passphrase: \(passphrase)\n".utf8))
        } else {
            passphrase = try Passphrase.read(file: args.value("passphrase-file"), confirm: true)
        }
        let text: String
        do {
            text = try Invite.make(identity: identity, store: store, prefs: prefs, passphrase: passphrase,
                                   strength: strength, now: SystemClock().now(), lifetime: lifetime)
        } catch let e as PairingError { throw CommandFailure(e.description) }
        let expiry = lifetime % 86_400 == 0 ? "\(lifetime / 86_400) days" : "\(lifetime / 3600) h"
        if let out = args.value("out") {
            do { try AtomicFile.write(Array((text + "\n").utf8), to: out, mode: 0o600) } catch { throw CommandFailure("\(error)") }
            Output.line("wrote an invite to \(out) (one device, expires in \(expiry)); join with: quire --home DIR init --join \(out) --name NAME")
        } else {
            Output.line(text)
        }
    }
}

/// Where a passphrase comes from: a file, the environment, or the terminal.
enum Passphrase {
    static func read(file: String?, confirm: Bool) throws -> String {
        if let file {
            let data = try Output.readFile(file, what: "passphrase file")
            let first = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).first ?? ""
            return String(first).trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
        }
        if let env = takeFromEnvironment("QUIRE_PASSPHRASE") { return env }
        guard let first = prompt("passphrase: ") else {
            throw CommandFailure("no passphrase: pass --passphrase-file F, set QUIRE_PASSPHRASE, or run on a terminal")
        }
        if confirm {
            guard let again = prompt("again: "), again == first else { throw CommandFailure("the passphrases do not match") }
        }
        return first
    }

    /// Reads a secret from the environment and removes it there, so no child
    /// process (the mount daemon, a sync started in the background) inherits it.
    static func takeFromEnvironment(_ name: String) -> String? {
        defer { unsetenv(name) }
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// Five pronounceable words of consonant-vowel-consonant-vowel (16 × 5
    /// × 16 × 5 = 6,400 each, about 12.6 bits; 63 bits in all), easy to read
    /// aloud or type on a phone, as magic-wormhole's codes are.
    static func makeWords() -> String {
        let consonants = Array("bdfghjklmnprstvz"), vowels = Array("aeiou")
        return (0..<5).map { _ in
            let r = SecureRandom.bytes(4)
            return String([consonants[Int(r[0] & 15)], vowels[Int(r[1]) % 5], consonants[Int(r[2] & 15)], vowels[Int(r[3]) % 5]])
        }.joined(separator: "-")
    }

    /// Reads one line from the controlling terminal with echo off.
    private static func prompt(_ text: String) -> String? {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var old = termios()
        guard tcgetattr(fd, &old) == 0 else { return nil }
        var quiet = old
        quiet.c_lflag &= ~tcflag_t(ECHO)
        _ = tcsetattr(fd, TCSAFLUSH, &quiet)
        defer { _ = tcsetattr(fd, TCSAFLUSH, &old); _ = write(fd, "\n", 1) }
        _ = text.withCString { write(fd, $0, strlen($0)) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while Glibc.read(fd, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        return String(decoding: line, as: UTF8.self)
    }
}
