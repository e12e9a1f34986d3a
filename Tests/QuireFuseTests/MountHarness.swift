import Foundation
import QuireFuse
import XCTest

/// A filesystem mounted in a fresh temporary directory and served on a
/// background thread, as the daemon would.
final class MountedFileSystem: @unchecked Sendable {
    let fileSystem: MemoryFileSystem
    let session: FuseSession
    let directory: String
    let mountpoint: String
    private let finished = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var outcome: Result<FuseSession.Ending, FuseSessionError>?
    private(set) var unexpectedErrors: [String] = []

    init(fileSystem: MemoryFileSystem = MemoryFileSystem(), configure: (inout FuseSession.Options) -> Void = { _ in }) throws {
        self.fileSystem = fileSystem
        directory = NSTemporaryDirectory() + "quire-fuse-\(UUID().uuidString)"
        mountpoint = directory + "/mnt"
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        var options = FuseSession.Options()
        options.fileSystemName = "quire-test"
        configure(&options)
        let box = ErrorBox()
        options.reportUnexpectedError = { operation, error in box.append("\(operation): \(error)") }
        session = try FuseSession(fileSystem: fileSystem, mountpoint: mountpoint, options: options)
        errorBox = box
        let thread = Thread { [self] in
            let result = Result { () throws(FuseSessionError) in try session.run() }
            lock.lock()
            outcome = result
            lock.unlock()
            finished.signal()
        }
        thread.start()
    }

    private let errorBox: ErrorBox

    var reportedErrors: [String] { errorBox.items }

    func path(_ name: String) -> String { mountpoint + "/" + name }

    /// Waits for `run()` to return; nil on timeout.
    func waitForEnd(timeout: TimeInterval = 10) -> Result<FuseSession.Ending, FuseSessionError>? {
        guard finished.wait(timeout: .now() + timeout) == .success else { return nil }
        finished.signal()  // let later waiters through too
        lock.lock()
        defer { lock.unlock() }
        return outcome
    }

    /// Stops the session and removes the temporary directory, whatever state
    /// the test left things in.
    func close() {
        session.stop()
        if waitForEnd() == nil || FuseMounts.isMounted(mountpoint) {
            try? FuseMounts.unmountLazily(mountpoint)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

final class ErrorBox: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []
    func append(_ item: String) { lock.lock(); storage.append(item); lock.unlock() }
    var items: [String] { lock.lock(); defer { lock.unlock() }; return storage }
}

/// libc calls Swift's Glibc module does not declare (GNU extensions, xattrs),
/// looked up at run time.
enum ExtraLibC {
    private static func symbol<T>(_ name: String, as type: T.Type) -> T {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            fatalError("libc has no \(name)")
        }
        return unsafeBitCast(address, to: type)
    }

    typealias Renameat2 = @convention(c) (Int32, UnsafePointer<CChar>?, Int32, UnsafePointer<CChar>?, UInt32) -> Int32
    typealias Getxattr = @convention(c) (UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeMutableRawPointer?, Int) -> Int
    typealias Setxattr = @convention(c) (UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeRawPointer?, Int, Int32) -> Int32
    typealias Listxattr = @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int) -> Int
    typealias Removexattr = @convention(c) (UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32

    static let noReplace: UInt32 = 1
    static let exchange: UInt32 = 2
    static let xattrCreate: Int32 = 1

    /// renameat2(2); returns errno, 0 on success.
    static func rename(_ from: String, _ to: String, flags: UInt32) -> Int32 {
        let call = symbol("renameat2", as: Renameat2.self)
        return call(AT_FDCWD, from, AT_FDCWD, to, flags) == 0 ? 0 : errno
    }

    static func setAttribute(_ path: String, _ name: String, _ value: [UInt8], flags: Int32 = 0) -> Int32 {
        let call = symbol("setxattr", as: Setxattr.self)
        return value.withUnsafeBytes { call(path, name, $0.baseAddress, $0.count, flags) } == 0 ? 0 : errno
    }

    /// getxattr(2) with a buffer of `capacity` bytes (0: size probe).
    static func attribute(_ path: String, _ name: String, capacity: Int) -> (result: Int, errno: Int32, value: [UInt8]) {
        let call = symbol("getxattr", as: Getxattr.self)
        var buffer = [UInt8](repeating: 0, count: capacity)
        let result = buffer.withUnsafeMutableBytes { call(path, name, capacity == 0 ? nil : $0.baseAddress, capacity) }
        return (result, result < 0 ? errno : 0, result > 0 ? Array(buffer.prefix(result)) : [])
    }

    static func attributeNames(_ path: String, capacity: Int) -> (result: Int, errno: Int32, names: [String]) {
        let call = symbol("listxattr", as: Listxattr.self)
        var buffer = [CChar](repeating: 0, count: max(capacity, 1))
        let result = buffer.withUnsafeMutableBufferPointer { call(path, capacity == 0 ? nil : $0.baseAddress, capacity) }
        guard result > 0, capacity > 0 else { return (result, result < 0 ? errno : 0, []) }
        let names = buffer.prefix(result).split(separator: 0).map { String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return (result, 0, names)
    }

    static func removeAttribute(_ path: String, _ name: String) -> Int32 {
        let call = symbol("removexattr", as: Removexattr.self)
        return call(path, name) == 0 ? 0 : errno
    }
}
