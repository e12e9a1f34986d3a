import Foundation
import QuireStore

// quire: the command-line program. Exit status 0 ok, 1 failure (one line on
// stderr), 2 usage.

let status = QuireCLI.run(Array(CommandLine.arguments.dropFirst()))
exit(status)
