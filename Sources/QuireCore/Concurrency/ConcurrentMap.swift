import Dispatch
import Synchronization

extension Array where Element: Sendable {
    /// `map(transform)`, with the elements cut into a few chunks that run at
    /// once on Dispatch's threads (as many at a time as there are cores);
    /// the results keep the elements' order. For work of several
    /// microseconds an element at least (decoding rows, deflating bodies):
    /// arrays under `2 * minimumChunk` are mapped on the calling thread.
    public func concurrentMap<T: Sendable>(minimumChunk: Int = 32, _ transform: @Sendable (Element) -> T) -> [T] {
        let chunks = Swift.min(Self.maximumChunks, count / Swift.max(1, minimumChunk))
        guard chunks > 1 else { return map(transform) }
        let results = Mutex<[[T]]>(Array<[T]>(repeating: [], count: chunks))
        let size = (count + chunks - 1) / chunks
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            let part = self[Swift.min(count, chunk * size)..<Swift.min(count, (chunk + 1) * size)].map(transform)
            results.withLock { $0[chunk] = part }
        }
        return results.withLock { $0.flatMap { $0 } }
    }

    /// Enough chunks to keep a few cores busy and even out uneven elements.
    private static var maximumChunks: Int { 8 }
}
