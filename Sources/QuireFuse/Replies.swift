import CFuse3
import Glibc
import Synchronization

/// The state every callback reaches through `fuse_req_userdata`: the
/// filesystem and the session's reply policy. Held by an `Unmanaged`
/// reference that the session retains until `fuse_session_destroy` returns.
final class SessionCore: Sendable {
    let fileSystem: any FuseFileSystem
    let reportUnexpectedError: (@Sendable (String, any Error) -> Void)?
    /// Set once the kernel's INIT has been answered; before that the kernel
    /// has cached nothing and libfuse refuses notifications (ENOSYS).
    let isInitialized = Atomic<Bool>(false)
    /// The kernel's references to each inode.
    let lookups = LookupCounts()

    init(fileSystem: any FuseFileSystem, reportUnexpectedError: (@Sendable (String, any Error) -> Void)?) {
        self.fileSystem = fileSystem
        self.reportUnexpectedError = reportUnexpectedError
    }

    static func of(_ request: fuse_req_t?) -> SessionCore {
        Unmanaged<SessionCore>.fromOpaque(fuse_req_userdata(request)!).takeUnretainedValue()
    }

    static func of(userdata: UnsafeMutableRawPointer?) -> SessionCore {
        Unmanaged<SessionCore>.fromOpaque(userdata!).takeUnretainedValue()
    }
}

/// Runs one request: calls `body` with the filesystem and the caller, then
/// sends `reply`'s answer, or the errno of whatever `body` threw.
/// Exactly one reply leaves for every request that expects one.
@inline(__always)
func serve<Result>(
    _ request: fuse_req_t?, _ operation: StaticString,
    _ body: (any FuseFileSystem, FuseRequest) throws -> Result,
    reply: (Result) -> Int32
) {
    let core = SessionCore.of(request)
    let result: Result
    do {
        result = try body(core.fileSystem, FuseRequest(request))
    } catch {
        replyError(request, error, operation, core)
        return
    }
    _ = reply(result)
}

/// `serve` for a request whose reply hands the kernel entries: they are
/// counted (see `LookupCounts`), and taken back if the reply fails.
@inline(__always)
func serveEntries<Result>(
    _ request: fuse_req_t?, _ operation: StaticString,
    _ body: (any FuseFileSystem, FuseRequest) throws -> Result,
    inodes: (Result) -> [UInt64],
    reply: (Result) -> Int32
) {
    let core = SessionCore.of(request)
    core.lookups.beginHandingOut()
    let result: Result
    do {
        result = try body(core.fileSystem, FuseRequest(request))
    } catch {
        core.lookups.endHandingOut([], fileSystem: core.fileSystem)
        replyError(request, error, operation, core)
        return
    }
    let handedOut = inodes(result)
    core.lookups.endHandingOut(handedOut, fileSystem: core.fileSystem)
    if reply(result) != 0 {
        for inode in handedOut { core.lookups.forget(inode, 1, fileSystem: core.fileSystem) }
    }
}

func replyError(_ request: fuse_req_t?, _ error: any Error, _ operation: StaticString, _ core: SessionCore) {
    let errno = FuseError.replying(to: error)
    // Unexpected errors, and names refused before the filesystem saw them,
    // are reported so the mount can log them (nothing else would).
    if error is InvalidName || (!(error is FuseError) && !(error is any FuseErrorConvertible)) {
        core.reportUnexpectedError?("\(operation)", error)
    }
    _ = fuse_reply_err(request, errno.rawValue)
}

/// A name from the kernel that is not UTF-8: refused with EILSEQ.
struct InvalidName: Error, FuseErrorConvertible, CustomStringConvertible {
    let bytes: [UInt8]
    var fuseError: FuseError { .illegalByteSequence }
    var description: String {
        let shown = bytes.prefix(64).map { $0 >= 0x20 && $0 < 0x7F ? String(UnicodeScalar($0)) : "\\x" + ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        return "refused the name '\(shown)': it is not UTF-8 (file names here are UTF-8 titles)"
    }
}

/// A name from the kernel. Linux names are bytes; Quire's are UTF-8, so a name
/// that is not valid UTF-8 cannot exist here.
func decodeName(_ name: UnsafePointer<CChar>?) throws -> String {
    guard let name else { throw FuseError.illegalByteSequence }
    guard let decoded = String(validatingCString: name) else {
        throw InvalidName(bytes: Array(UnsafeBufferPointer(start: UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self), count: strlen(name))))
    }
    return decoded
}

func replyEntry(_ request: fuse_req_t?, _ entry: FuseEntry) -> Int32 {
    var parameters = entry.parameters
    return fuse_reply_entry(request, &parameters)
}

func replyAttributes(_ request: fuse_req_t?, _ reply: FuseAttributeReply) -> Int32 {
    var attributes = reply.attributes.cValue
    return fuse_reply_attr(request, &attributes, reply.timeout)
}

func replyBytes(_ request: fuse_req_t?, _ bytes: some Collection<UInt8>) -> Int32 {
    let array = Array(bytes)
    return array.withUnsafeBytes { buffer in
        fuse_reply_buf(request, buffer.baseAddress?.assumingMemoryBound(to: CChar.self), buffer.count)
    }
}

func replyOK(_ request: fuse_req_t?) -> Int32 { fuse_reply_err(request, 0) }

/// The getxattr/listxattr size protocol: size 0 asks only for the length;
/// a buffer too small for the value gets ERANGE.
func replyExtendedAttribute(_ request: fuse_req_t?, _ value: [UInt8], capacity: Int) -> Int32 {
    if capacity == 0 { return fuse_reply_xattr(request, value.count) }
    if value.count > capacity { return fuse_reply_err(request, ERANGE) }
    return replyBytes(request, value)
}
