// swift-tools-version: 6.0
// Quire: one person's notes, plans, contacts and journal on all of their own
// devices, with no server that can read them. See README.md and DESIGN.md.
import PackageDescription

let package = Package(
    name: "Quire",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "quire", targets: ["quire"]),
    ],
    targets: [
        // C system libraries: a module map and a shim header each, nothing else.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CFuse3", pkgConfig: "fuse3", providers: [.apt(["libfuse3-dev"])]),
        .systemLibrary(name: "CHiredis", providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(name: "CDeflate", pkgConfig: "libdeflate", providers: [.apt(["libdeflate-dev"])]),
        // Linux calls Swift's Glibc does not import (statx).
        .systemLibrary(name: "CSystem"),

        // Typed Swift over libsodium: the only place that touches CSodium.
        .target(name: "QuireCrypto", dependencies: ["CSodium"]),
        // Pure: CBOR, rows, leaves, fingerprints, digest, version vectors, merges.
        .target(name: "QuireCore", dependencies: ["QuireCrypto"]),
        // The SQLite replica: the only place that touches CSQLite.
        .target(name: "QuireStore", dependencies: ["QuireCore", "QuireCrypto", "CSQLite", "CDeflate", "CSystem"]),
        // Byte transports with no mailbox: local datagram relay, Redis pub/sub.
        .target(name: "QuireRelay", dependencies: ["CHiredis"]),
        // Sealed frames, pairing, reconcile, offload/recall.
        .target(name: "QuireSync", dependencies: ["QuireStore", "QuireRelay", "QuireCore", "QuireCrypto"]),
        // Typed Swift over libfuse3's low-level API: the only place that touches CFuse3.
        .target(name: "QuireFuse", dependencies: ["CFuse3"]),
        // Namespaces as folders, rows as files.
        .target(name: "QuireFS", dependencies: ["QuireFuse", "QuireStore", "QuireCore"]),
        // Deterministic fleet simulation: real replicas, engines and merges;
        // only time, randomness, the relay and the disk are simulated.
        .target(name: "QuireSimulation", dependencies: ["QuireSync", "QuireStore", "QuireCore", "QuireCrypto", "QuireRelay"]),
        // The command-line program and its daemon.
        // What runs in the background: sync service, offload runtime,
        // control channel, the mount daemon's process plumbing.
        .target(name: "QuireDaemon", dependencies: ["QuireSync", "QuireStore", "QuireCore", "QuireCrypto", "QuireRelay", "CSystem"]),
        .executableTarget(name: "quire", dependencies: ["QuireStore", "QuireCore", "QuireCrypto", "QuireSync", "QuireFS", "QuireRelay", "QuireDaemon"]),

        // Benchmarks (run through the scripts in tools/).
        .executableTarget(name: "bench-digest", dependencies: ["QuireStore", "QuireCore"], path: "tools/BenchDigest"),
        .executableTarget(name: "bench-sync", dependencies: ["QuireSync", "QuireStore", "QuireCore", "QuireRelay"], path: "tools/BenchSync"),
        .executableTarget(name: "bench-context", dependencies: ["QuireCore"], path: "tools/BenchContext"),
        .executableTarget(name: "bench-anchor", dependencies: ["QuireSync", "QuireStore", "QuireCore", "QuireCrypto"], path: "tools/BenchAnchor"),
        // Seeded fleet soaks and replays (run through tools/simulate).
        .executableTarget(name: "quire-simulate", dependencies: ["QuireSimulation"], path: "tools/Simulate"),

        // Loopback helpers shared by the relay, sync and end-to-end tests.
        .target(name: "QuireTestSupport", dependencies: ["QuireSimulation"], path: "Tests/Support"),
        .testTarget(name: "QuireCoreTests", dependencies: ["QuireTestSupport", "QuireCore", "QuireCrypto"]),
        .testTarget(name: "QuireStoreTests", dependencies: ["QuireStore", "QuireCore"]),
        .testTarget(name: "QuireRelayTests", dependencies: ["QuireTestSupport", "QuireRelay", "QuireCrypto"]),
        .testTarget(name: "QuireSyncTests", dependencies: ["QuireTestSupport", "QuireSync", "QuireStore", "QuireCore", "QuireCrypto", "QuireRelay"]),
        .testTarget(name: "QuireFuseTests", dependencies: ["QuireFuse", "QuireStore"]),
        .testTarget(name: "QuireDaemonTests", dependencies: ["QuireDaemon", "QuireSync", "QuireCore"]),
        .testTarget(name: "QuireFSTests", dependencies: ["QuireTestSupport", "QuireFS", "QuireStore", "QuireCore"]),
        .testTarget(name: "QuireSimulationTests", dependencies: ["QuireSimulation", "QuireSync", "QuireStore", "QuireCore", "QuireCrypto"]),
        .testTarget(name: "EndToEndTests", dependencies: ["QuireTestSupport", "QuireCore", "QuireStore", "QuireSync", "QuireRelay", "QuireCrypto"],
                    exclude: ["Fixtures"]),
    ]
)
