/// Commands contributed by the mount and sync layers.
enum ExtensionCommands {
    static let all: [Command] = []
}
