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
            usage: quire invite [--passphrase-file F] [--out FILE] [--kdf moderate|interactive]

            Prints (or writes to FILE, mode 0600) an invite carrying what a new
            device needs to join this account: the account and backup keys, the
            roster, the relay and cloud settings. It is sealed with a key derived
            from a passphrase (Argon2id), so the invite alone reveals nothing; pass
            the invite and the passphrase to the new device by different routes.
            It expires after 7 days. On the new device:
                quire --home DIR init --join INVITE-OR-FILE --name NAME

            The passphrase (at least 8 characters) is read from, in order:
              --passphrase-file F   the first line of F
              QUIRE_PASSPHRASE      the environment (for scripts)
              the terminal          asked twice, not echoed
            Options:
              --out FILE   write the invite to FILE instead of standard output
              --kdf K      key-derivation cost: moderate (default, ~256 MiB) or
                           interactive (~64 MiB, faster on small machines)
            """,
        valued: ["passphrase-file", "out", "kdf"]
    ) { args, inv in
        try args.expectPositional(0...0, "")
        let strength: PasswordHash.Strength
        switch args.value("kdf") ?? "moderate" {
        case "moderate": strength = .moderate
        case "interactive": strength = .interactive
        case let other: throw UsageError("--kdf is moderate or interactive, not '\(other)'")
        }
        let (identity, store) = try inv.open()
        let prefs = try inv.home.prefs.load()
        let passphrase = try Passphrase.read(file: args.value("passphrase-file"), confirm: true)
        let text: String
        do {
            text = try Invite.make(identity: identity, store: store, prefs: prefs, passphrase: passphrase,
                                   strength: strength, now: SystemClock().now())
        } catch let e as PairingError { throw CommandFailure(e.description) }
        if let out = args.value("out") {
            do { try AtomicFile.write(Array((text + "\n").utf8), to: out, mode: 0o600) } catch { throw CommandFailure("\(error)") }
            Output.line("wrote an invite to \(out) (expires in 7 days); join with: quire --home DIR init --join \(out) --name NAME")
        } else {
            Output.line(text)
        }
    }
}

/// Where a passphrase comes from: a file, the environment, or the terminal.
enum Passphrase {
    static func read(file: String?, confirm: Bool) throws -> String {
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CommandFailure("cannot read passphrase file \(file): \(String(cString: strerror(errno)))")
            }
            let first = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).first ?? ""
            return String(first).trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
        }
        if let env = ProcessInfo.processInfo.environment["QUIRE_PASSPHRASE"], !env.isEmpty { return env }
        guard let first = prompt("passphrase: ") else {
            throw CommandFailure("no passphrase: pass --passphrase-file F, set QUIRE_PASSPHRASE, or run on a terminal")
        }
        if confirm {
            guard let again = prompt("again: "), again == first else { throw CommandFailure("the passphrases do not match") }
        }
        return first
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
