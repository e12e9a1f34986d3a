/// Commands contributed by the mount and sync layers.
enum ExtensionCommands {
    static let all: [Command] = [
        SyncCommands.sync, SyncCommands.up, InviteCommand.command, DevicesCommands.devices,
        MountCommands.mount, MountCommands.unmount,
        OffloadCommands.offload, OffloadCommands.recall, FsckCommand.command, RoleCommand.command,
        BackupCommands.backup, BackupCommands.restore, ConfigCommand.command, RepairCommand.command,
        TrashCommands.trash, TrashCommands.undelete,
    ]
}
