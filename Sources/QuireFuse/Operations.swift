import CFuse3
import Glibc

// The @convention(c) trampolines libfuse calls. Each one turns C arguments
// into typed values, calls the filesystem, and replies exactly once.
// Operations left nil (locks, ioctl, poll, ...) get libfuse's own answer,
// which matters: registering getlk/setlk or flock would make libfuse announce
// lock support to the kernel.

private func handle(_ info: UnsafeMutablePointer<fuse_file_info>?) -> UInt64 { info?.pointee.fh ?? 0 }
private func openFlags(_ info: UnsafeMutablePointer<fuse_file_info>?) -> FuseOpenFlags {
    FuseOpenFlags(rawValue: info?.pointee.flags ?? 0)
}

func makeOperations(usesReadDirectoryPlus: Bool) -> fuse_lowlevel_ops {
    var operations = fuse_lowlevel_ops()

    operations.`init` = { userdata, info in
        guard let info else { return }
        var connection = FuseConnection(info.pointee)
        let core = SessionCore.of(userdata: userdata)
        core.fileSystem.initialize(connection: &connection)
        connection.apply(to: &info.pointee)
        core.isInitialized.store(true, ordering: .releasing)
    }
    operations.destroy = { userdata in
        SessionCore.of(userdata: userdata).fileSystem.destroy()
    }

    operations.lookup = { request, parent, name in
        serveEntries(request, "lookup", { fileSystem, caller in
            // A name that cannot be decoded cannot exist here.
            guard let name = try? decodeName(name) else { throw FuseError.noEntry }
            return try fileSystem.lookup(parent: FuseInode(parent), name: name, request: caller)
        }, inodes: { [$0.attributes.inode.rawValue] }, reply: { replyEntry(request, $0) })
    }
    operations.forget = { request, inode, lookups in
        let core = SessionCore.of(request)
        core.fileSystem.forget(FuseInode(inode), lookups: lookups)
        core.lookups.forget(inode, lookups, fileSystem: core.fileSystem)
        fuse_reply_none(request)
    }
    operations.forget_multi = { request, count, items in
        let core = SessionCore.of(request)
        let batch = (0..<count).map { index in
            FuseForget(inode: FuseInode(items![index].ino), lookups: items![index].nlookup)
        }
        core.fileSystem.forget(batch)
        for item in batch { core.lookups.forget(item.inode.rawValue, item.lookups, fileSystem: core.fileSystem) }
        fuse_reply_none(request)
    }

    operations.getattr = { request, inode, info in
        serve(request, "getattr", { fileSystem, caller in
            try fileSystem.getAttributes(FuseInode(inode), handle: info.map { $0.pointee.fh }, request: caller)
        }, reply: { replyAttributes(request, $0) })
    }
    operations.setattr = { request, inode, attributes, toSet, info in
        serve(request, "setattr", { fileSystem, caller in
            let changes = FuseAttributeChanges(stat: attributes?.pointee ?? stat(), toSet: toSet)
            return try fileSystem.setAttributes(
                FuseInode(inode), changes, handle: info.map { $0.pointee.fh }, request: caller)
        }, reply: { replyAttributes(request, $0) })
    }
    operations.access = { request, inode, mask in
        serve(request, "access", { fileSystem, caller in
            try fileSystem.access(FuseInode(inode), mask: FuseAccessMask(rawValue: mask), request: caller)
        }, reply: { replyOK(request) })
    }
    operations.statfs = { request, inode in
        serve(request, "statfs", { fileSystem, caller in
            try fileSystem.statistics(FuseInode(inode), request: caller)
        }, reply: { statistics in
            var result = statistics.cValue
            return fuse_reply_statfs(request, &result)
        })
    }

    operations.opendir = { request, inode, info in
        serve(request, "opendir", { fileSystem, caller in
            try fileSystem.openDirectory(FuseInode(inode), flags: openFlags(info), request: caller)
        }, reply: { reply in
            guard let info else { return fuse_reply_err(request, EIO) }
            reply.fill(&info.pointee)
            return fuse_reply_open(request, info)
        })
    }
    operations.readdir = { request, inode, size, offset, info in
        let core = SessionCore.of(request)
        var buffer = FuseDirectoryBuffer(request: request, capacity: size)
        do {
            try core.fileSystem.readDirectory(
                FuseInode(inode), handle: handle(info), offset: UInt64(clamping: offset),
                into: &buffer, request: FuseRequest(request))
        } catch {
            replyError(request, error, "readdir", core)
            return
        }
        _ = buffer.reply()
    }
    if usesReadDirectoryPlus {
        operations.readdirplus = { request, inode, size, offset, info in
            let core = SessionCore.of(request)
            var buffer = FuseDirectoryPlusBuffer(request: request, capacity: size)
            core.lookups.beginHandingOut()
            do {
                try core.fileSystem.readDirectoryPlus(
                    FuseInode(inode), handle: handle(info), offset: UInt64(clamping: offset),
                    into: &buffer, request: FuseRequest(request))
            } catch {
                core.lookups.endHandingOut([], fileSystem: core.fileSystem)
                replyError(request, error, "readdirplus", core)
                return
            }
            let handedOut = buffer.handedOut
            core.lookups.endHandingOut(handedOut, fileSystem: core.fileSystem)
            if buffer.reply() != 0 {
                for inode in handedOut { core.lookups.forget(inode, 1, fileSystem: core.fileSystem) }
            }
        }
    }
    operations.releasedir = { request, inode, info in
        serve(request, "releasedir", { fileSystem, caller in
            try fileSystem.releaseDirectory(FuseInode(inode), handle: handle(info), request: caller)
        }, reply: { replyOK(request) })
    }
    operations.fsyncdir = { request, inode, dataOnly, info in
        serve(request, "fsyncdir", { fileSystem, caller in
            try fileSystem.synchronizeDirectory(
                FuseInode(inode), handle: handle(info), dataOnly: dataOnly != 0, request: caller)
        }, reply: { replyOK(request) })
    }

    operations.open = { request, inode, info in
        serve(request, "open", { fileSystem, caller in
            try fileSystem.open(FuseInode(inode), flags: openFlags(info), request: caller)
        }, reply: { reply in
            guard let info else { return fuse_reply_err(request, EIO) }
            reply.fill(&info.pointee)
            return fuse_reply_open(request, info)
        })
    }
    operations.create = { request, parent, name, mode, info in
        serveEntries(request, "create", { fileSystem, caller in
            try fileSystem.create(
                parent: FuseInode(parent), name: decodeName(name), mode: UInt32(mode),
                flags: openFlags(info), request: caller)
        }, inodes: { [$0.entry.attributes.inode.rawValue] }, reply: { reply in
            guard let info else { return fuse_reply_err(request, EIO) }
            reply.open.fill(&info.pointee)
            var parameters = reply.entry.parameters
            return fuse_reply_create(request, &parameters, info)
        })
    }
    operations.read = { request, inode, size, offset, info in
        serve(request, "read", { fileSystem, caller in
            try fileSystem.read(
                FuseInode(inode), handle: handle(info), offset: UInt64(clamping: offset), size: size,
                request: caller)
        }, reply: { bytes in replyBytes(request, bytes.prefix(size)) })
    }
    operations.write = { request, inode, bytes, size, offset, info in
        serve(request, "write", { fileSystem, caller in
            let data = size == 0 ? [] : Array(UnsafeRawBufferPointer(start: bytes, count: size))
            return try fileSystem.write(
                FuseInode(inode), handle: handle(info), offset: UInt64(clamping: offset), data: data,
                flags: openFlags(info), request: caller)
        }, reply: { count in fuse_reply_write(request, min(max(count, 0), size)) })
    }
    operations.flush = { request, inode, info in
        serve(request, "flush", { fileSystem, caller in
            try fileSystem.flush(FuseInode(inode), handle: handle(info), request: caller)
        }, reply: { replyOK(request) })
    }
    operations.fsync = { request, inode, dataOnly, info in
        serve(request, "fsync", { fileSystem, caller in
            try fileSystem.synchronize(FuseInode(inode), handle: handle(info), dataOnly: dataOnly != 0, request: caller)
        }, reply: { replyOK(request) })
    }
    operations.release = { request, inode, info in
        serve(request, "release", { fileSystem, caller in
            try fileSystem.release(FuseInode(inode), handle: handle(info), flags: openFlags(info), request: caller)
        }, reply: { replyOK(request) })
    }

    operations.mkdir = { request, parent, name, mode in
        serveEntries(request, "mkdir", { fileSystem, caller in
            try fileSystem.makeDirectory(
                parent: FuseInode(parent), name: decodeName(name), mode: UInt32(mode) & 0o7777, request: caller)
        }, inodes: { [$0.attributes.inode.rawValue] }, reply: { replyEntry(request, $0) })
    }
    operations.mknod = { request, parent, name, mode, device in
        serveEntries(request, "mknod", { fileSystem, caller in
            try fileSystem.makeNode(
                parent: FuseInode(parent), name: decodeName(name), mode: UInt32(mode), device: UInt64(device),
                request: caller)
        }, inodes: { [$0.attributes.inode.rawValue] }, reply: { replyEntry(request, $0) })
    }
    operations.symlink = { request, target, parent, name in
        serveEntries(request, "symlink", { fileSystem, caller in
            try fileSystem.makeSymbolicLink(
                parent: FuseInode(parent), name: decodeName(name), target: decodeName(target), request: caller)
        }, inodes: { [$0.attributes.inode.rawValue] }, reply: { replyEntry(request, $0) })
    }
    operations.readlink = { request, inode in
        serve(request, "readlink", { fileSystem, caller in
            try fileSystem.readSymbolicLink(FuseInode(inode), request: caller)
        }, reply: { target in fuse_reply_readlink(request, target) })
    }
    operations.link = { request, inode, newParent, newName in
        serveEntries(request, "link", { fileSystem, caller in
            try fileSystem.link(
                FuseInode(inode), newParent: FuseInode(newParent), newName: decodeName(newName), request: caller)
        }, inodes: { [$0.attributes.inode.rawValue] }, reply: { replyEntry(request, $0) })
    }
    operations.unlink = { request, parent, name in
        serve(request, "unlink", { fileSystem, caller in
            try fileSystem.unlink(parent: FuseInode(parent), name: decodeName(name), request: caller)
        }, reply: { replyOK(request) })
    }
    operations.rmdir = { request, parent, name in
        serve(request, "rmdir", { fileSystem, caller in
            try fileSystem.removeDirectory(parent: FuseInode(parent), name: decodeName(name), request: caller)
        }, reply: { replyOK(request) })
    }
    operations.rename = { request, parent, name, newParent, newName, flags in
        serve(request, "rename", { fileSystem, caller in
            try fileSystem.rename(
                parent: FuseInode(parent), name: decodeName(name), newParent: FuseInode(newParent),
                newName: decodeName(newName), flags: FuseRenameFlags(rawValue: flags), request: caller)
        }, reply: { replyOK(request) })
    }

    operations.getxattr = { request, inode, name, size in
        serve(request, "getxattr", { fileSystem, caller in
            try fileSystem.extendedAttribute(FuseInode(inode), name: decodeName(name), request: caller)
        }, reply: { value in replyExtendedAttribute(request, value, capacity: size) })
    }
    operations.setxattr = { request, inode, name, value, size, flags in
        serve(request, "setxattr", { fileSystem, caller in
            let bytes = size == 0 ? [] : Array(UnsafeRawBufferPointer(start: value, count: size))
            return try fileSystem.setExtendedAttribute(
                FuseInode(inode), name: decodeName(name), value: bytes,
                flags: FuseExtendedAttributeFlags(rawValue: flags), request: caller)
        }, reply: { replyOK(request) })
    }
    operations.listxattr = { request, inode, size in
        serve(request, "listxattr", { fileSystem, caller in
            try fileSystem.extendedAttributeNames(FuseInode(inode), request: caller)
        }, reply: { names in
            // The list format: each name followed by a NUL.
            let joined: [UInt8] = names.flatMap { name -> [UInt8] in Array(name.utf8) + [0] }
            return replyExtendedAttribute(request, joined, capacity: size)
        })
    }
    operations.removexattr = { request, inode, name in
        serve(request, "removexattr", { fileSystem, caller in
            try fileSystem.removeExtendedAttribute(FuseInode(inode), name: decodeName(name), request: caller)
        }, reply: { replyOK(request) })
    }

    return operations
}
