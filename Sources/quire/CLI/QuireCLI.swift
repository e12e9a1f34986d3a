import Foundation
import QuireCore
import QuireStore
import QuireDaemon

/// One subcommand: its help text is the single source of what it accepts.
struct Command: Sendable {
    let name: String
    let summary: String
    let usage: String
    var valued: Set<String> = []
    var flags: Set<String> = []
    let run: @Sendable (Arguments, Invocation) throws -> Void
}

/// What every command gets: the chosen device directory.
struct Invocation: Sendable {
    let home: DeviceHome

    /// Opens the device, after the anchor check when it is behind its
    /// cloud folder's anchor (`AnchorCatchUp`): no command shows or edits
    /// a row the fleet collected.
    func open() throws -> (Identity, ReplicaStore) {
        let opened: (Identity, ReplicaStore)
        do { opened = try home.open() } catch { throw CommandFailure(error.description) }
        if let record = AnchorCatchUp.run(home: home, store: opened.1, identity: opened.0), let words = record.recovered {
            // On stderr: stdout stays what the command prints (scripts read it).
            Output.error("this device was behind the cloud anchor (put back from a backup?); " + words)
        }
        return opened
    }

    /// For commands that only read: also opens a replica `quire repair` set
    /// aside. A device is opened as `open` does, after the anchor check: a
    /// listing must not show a row the fleet collected either.
    func openForReading() throws -> ReplicaStore {
        guard home.setAside != nil else { return try open().1 }
        do { return try home.openForReading() } catch { throw CommandFailure(error.description) }
    }
}

enum QuireCLI {
    static let commands: [Command] = [
        InitCommand.command,
        RowCommands.put, RowCommands.get, RowCommands.list, RowCommands.remove,
        DigestCommands.digest, DigestCommands.status, DigestCommands.history, DebugCommands.debug,
    ] + ExtensionCommands.all

    static let globalHelp = """
        usage: quire [--home DIR] <command> [options]

        Quire keeps your notes, plans, contacts and journal on all of your own
        devices, with no server that can read them.

        Global options:
          --home DIR   the device directory (default: $XDG_DATA_HOME/quire,
                       else ~/.local/share/quire)
          -h, --help   show help (also: quire <command> --help)

        Commands:
        \(commands.map { "  " + $0.name.padding(toLength: 10, withPad: " ", startingAt: 0) + " " + $0.summary }.joined(separator: "\n"))

        Namespaces: notebook, plans, contacts, saga, settings, memory.
        Exit status: 0 ok, 1 failure (one line on stderr), 2 usage error.
        """

    static func run(_ argv: [String]) -> Int32 {
        var args = argv
        var homePath: String? = nil
        // --home may come before the command (and, for convenience, after it).
        var i = 0
        while i < args.count {
            if args[i] == "--home" {
                guard i + 1 < args.count else { Output.error("option --home needs a value"); return 2 }
                homePath = args[i + 1]
                args.removeSubrange(i...(i + 1))
                continue
            }
            if args[i].hasPrefix("--home=") {
                homePath = String(args[i].dropFirst("--home=".count))
                args.remove(at: i)
                continue
            }
            if args[i] == "--" { break }
            i += 1
        }
        guard let name = args.first else {
            Output.error("no command given\n\(globalHelp)")
            return 2
        }
        if name == "-h" || name == "--help" || name == "help" {
            if args.count > 1, let c = commands.first(where: { $0.name == args[1] }) { Output.line(c.usage) } else { Output.line(globalHelp) }
            return 0
        }
        if name == "--version" || name == "version" { Output.line("quire 0.1.0 (state digest wire version \(StateDigest.wireVersion))"); return 0 }
        guard let command = commands.first(where: { $0.name == name }) else {
            Output.error("unknown command '\(name)'; run 'quire --help' for the list")
            return 2
        }
        let invocation = Invocation(home: DeviceHome(path: homePath ?? DeviceHome.defaultPath()))
        do {
            let parsed = try Arguments(Array(args.dropFirst()), valued: command.valued, flags: command.flags)
            if parsed.has("help") { Output.line(command.usage); return 0 }
            try command.run(parsed, invocation)
            return 0
        } catch let e as UsageError {
            Output.error("\(e.message)\nusage: see 'quire \(command.name) --help'")
            return 2
        } catch let e as CommandFailure {
            Output.error(e.message)
            return e.status
        } catch let e as StoreError {
            Output.error(e.description)
            return 1
        } catch {
            Output.error("\(error)")
            return 1
        }
    }
}
