import CFuse3
import Glibc

/// The few libc calls QuireFuse makes outside libfuse, each retrying EINTR
/// and turning errno into a `FuseError`.
enum System {
    static var effectiveUserID: UInt32 { geteuid() }

    /// The whole content of a small file such as /proc/self/mounts.
    static func readFile(_ path: String) throws(FuseError) -> [UInt8] {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FuseError.current }
        defer { _ = Glibc.close(descriptor) }
        var content: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress!, $0.count) }
            if count == 0 { return content }
            if count < 0 {
                if errno == EINTR { continue }
                throw FuseError.current
            }
            content += chunk[..<count]
        }
    }

    static func unmount(_ path: String, flags: Int32) throws(FuseError) {
        if umount2(path, flags) != 0 { throw FuseError.current }
    }

    /// realpath(3), or nil when a component cannot be resolved.
    static func resolvedPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static var currentDirectory: String? {
        guard let directory = getcwd(nil, 0) else { return nil }
        defer { free(directory) }
        return String(cString: directory)
    }

    /// Runs `executable` with `arguments` (argv[1...]) in our environment and
    /// waits for it. Returns the exit status, or -signal if a signal killed it.
    static func run(_ executable: String, _ arguments: [String]) throws(FuseError) -> Int32 {
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, nil, nil, argv, environ)
        guard spawned == 0 else { throw FuseError(spawned) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw FuseError.current }
        }
        // WIFEXITED / WEXITSTATUS are macros Swift cannot import.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -(status & 0x7f)
    }
}
