import CFuse3
import Glibc

/// An errno value that a filesystem operation replies with.
///
/// Throw one from any `FuseFileSystem` method and the kernel hands that errno
/// to the caller (`open(2)`, `stat(2)`, ...). Any other error becomes `.io`
/// (EIO), unless it conforms to `FuseErrorConvertible`.
public struct FuseError: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }
    public init(_ code: Int32) { self.rawValue = code }

    /// ENOENT: no such file or directory.
    public static let noEntry = FuseError(ENOENT)
    /// ESTALE: the file the kernel named is gone since it looked the name
    /// up; the kernel walks the path again once (an O_CREAT open then creates).
    public static let stale = FuseError(ESTALE)
    /// EEXIST: the name is already taken.
    public static let exists = FuseError(EEXIST)
    /// ENOTDIR: a path component or the target is not a directory.
    public static let notDirectory = FuseError(ENOTDIR)
    /// EISDIR: the target is a directory.
    public static let isDirectory = FuseError(EISDIR)
    /// ENOTEMPTY: the directory still has entries.
    public static let notEmpty = FuseError(ENOTEMPTY)
    /// EACCES: permission bits forbid the access.
    public static let permissionDenied = FuseError(EACCES)
    /// EPERM: the operation is not allowed at all (not a permission-bit matter).
    public static let notPermitted = FuseError(EPERM)
    /// EIO: something failed underneath; the catch-all for unexpected errors.
    public static let io = FuseError(EIO)
    /// ENOSPC: no space left.
    public static let noSpace = FuseError(ENOSPC)
    /// ENAMETOOLONG: the name is longer than the filesystem accepts.
    public static let nameTooLong = FuseError(ENAMETOOLONG)
    /// EINVAL: an argument is invalid for this filesystem.
    public static let invalid = FuseError(EINVAL)
    /// ENOSYS: the operation is not implemented. The kernel remembers this for
    /// some operations (flush, fsync, access, xattrs, ...) and stops asking.
    public static let notSupported = FuseError(ENOSYS)
    /// EOPNOTSUPP: implemented, but not for these arguments (e.g. a rename flag).
    public static let operationNotSupported = FuseError(EOPNOTSUPP)
    /// ENODATA: the extended attribute does not exist.
    public static let noData = FuseError(ENODATA)
    /// ERANGE: the caller's buffer is too small.
    public static let range = FuseError(ERANGE)
    /// EROFS: the filesystem (or this part of it) is read-only.
    public static let readOnly = FuseError(EROFS)
    /// EXDEV: rename across directories the filesystem cannot move between.
    public static let crossDevice = FuseError(EXDEV)
    /// EBADF: the file handle is unknown or not open for this access.
    public static let badFileHandle = FuseError(EBADF)
    /// EBUSY: the object is in use.
    public static let busy = FuseError(EBUSY)
    /// EAGAIN: try again later.
    public static let tryAgain = FuseError(EAGAIN)
    /// EFBIG: the file would grow past the size the filesystem allows.
    public static let fileTooLarge = FuseError(EFBIG)
    /// E2BIG: an argument list (e.g. an xattr value) is too long.
    public static let argumentListTooLong = FuseError(E2BIG)
    /// EILSEQ: a name is not valid UTF-8.
    public static let illegalByteSequence = FuseError(EILSEQ)
    /// ENOTCONN: the FUSE connection is gone (a stale mount).
    public static let notConnected = FuseError(ENOTCONN)
    /// EINTR: the request was interrupted.
    public static let interrupted = FuseError(EINTR)
    /// ENOMEM: out of memory.
    public static let noMemory = FuseError(ENOMEM)

    public var description: String {
        guard let text = strerror(rawValue) else { return "errno \(rawValue)" }
        return "\(String(cString: text)) (errno \(rawValue))"
    }

    /// The errno of the calling thread, as left by the last failing C call.
    static var current: FuseError { FuseError(errno) }
}

/// An error from another layer that knows which errno it means, so the
/// filesystem can throw its own errors and still reply precisely.
public protocol FuseErrorConvertible: Error {
    var fuseError: FuseError { get }
}

extension FuseError {
    /// The errno to reply with for any error a filesystem method threw.
    static func replying(to error: any Error) -> FuseError {
        switch error {
        case let error as FuseError: return error
        case let error as any FuseErrorConvertible: return error.fuseError
        default: return .io
        }
    }
}
