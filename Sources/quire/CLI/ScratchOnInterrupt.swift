import Foundation

/// Removes a command's scratch copy when it is interrupted (SIGINT from
/// Ctrl-C, SIGTERM), then exits with status 128 + the signal, as a shell reports one. A scratch copy of the
/// replica holds every note in clear; one left by a process that died
/// otherwise (SIGKILL, a power cut) is removed at the next start
/// (`DeviceHome.removeStaleScratch`).
///
/// `release` is called before the scratch copy stops being scratch (a
/// restore's staging folder once its marker names it): under the lock, so
/// the signal either removes it before that point or not at all.
final class ScratchOnInterrupt: @unchecked Sendable {
    private let lock = NSLock()
    private var remove: (@Sendable () -> Bool)?
    private var sources: [any DispatchSourceSignal] = []

    /// `remove` runs if SIGINT or SIGTERM arrives before `release`; it
    /// returns whether nothing is left.
    init(_ remove: @escaping @Sendable () -> Bool) {
        self.remove = remove
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in self?.interrupted(sig) }
            source.resume()
            sources.append(source)
        }
    }

    private func interrupted(_ sig: Int32) {
        lock.lock()   // held until the process dies: `release` cannot slip in
        // The command goes on meanwhile and may still add a file (SQLite's
        // journal, the next staged file, the staging folder itself) while
        // its folder is emptied: again until nothing was left three times
        // in a row (the command, still running, would have made its next
        // one), or two seconds have passed.
        if let remove {
            var clean = 0
            for _ in 0..<400 where clean < 3 {
                clean = remove() ? clean + 1 : 0
                if clean < 3 { usleep(5_000) }
            }
        }
        // Not raise() again: the signal is taken by dispatch (blocked for
        // every thread), so it would come back here and hang on the lock.
        // 128 + the signal is what a shell reports for a death by it.
        _exit(128 + sig)
    }

    /// From here on the scratch copy is kept whatever happens; the signals
    /// act as they did before.
    func release() {
        lock.lock()
        remove = nil
        for source in sources { source.cancel() }
        sources = []
        for sig in [SIGINT, SIGTERM] { signal(sig, SIG_DFL) }
        lock.unlock()
    }
}
