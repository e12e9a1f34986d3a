import Foundation
import QuireStore

// quire: the command-line program. Exit status 0 ok, 1 failure (one line on
// stderr), 2 usage.

// Everything quire creates (the replica and SQLite's WAL and SHM beside it,
// logs, sockets, state files, the mount daemon's files, backups, invites)
// is for its owner only, whatever umask the shell had: a umask of 000 must
// not leave notes readable by other local users.
umask(0o077)

let status = QuireCLI.run(Array(CommandLine.arguments.dropFirst()))
exit(status)
