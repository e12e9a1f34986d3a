import Foundation
import QuireCore
import QuireCrypto
import QuireRelay
import QuireStore
import QuireSync

/// A fleet of real devices of one account (real `ReplicaStore`, real
/// `SyncEngine`, real merges) on a simulated network, clock and disk,
/// stepped by hand: `tick()` delivers the frames that are due, steps every
/// online engine once, and moves the clock on. Nothing runs on its own
/// thread, so one seed gives one history.
///
/// Device life cycle, as the simulator drives it:
/// - powered on: the replica is open (a person can edit offline);
/// - online: also an engine attached to the network;
/// - powered off: engine stopped, replica closed, files at rest, which is
///   when a backup is copied or a backup copied back.
public final class SimulatedFleet: @unchecked Sendable {
    public let seed: UInt64
    public let clock: SimClock
    public let network: FaultyRelay
    public let trace: SimulationTrace
    public let configuration: SyncConfiguration
    /// The simulated disk: one directory per device, plus backups.
    public let base: String
    /// The simulated cloud folder (`--cloud`): shared by every device, never
    /// part of a device backup; each device has a view of its own (SimCloud).
    public var cloudPath: String { cloud.path }
    public let cloud: SimCloud
    /// Every line an engine logs, with its device (the barrier's commits are read from it).
    public var onLog: ((SimDevice, String) -> Void)?
    /// A device lost power inside its engine's step (see `armHoldPowerCut`):
    /// restart it from what survived.
    public var onPowerCut: ((SimDevice) -> Void)?
    /// Called just before that cut, while the disk can still be read.
    public var beforePowerCut: ((SimDevice) -> Void)?
    public private(set) var devices: [SimDevice] = []
    /// The devices of the roster: every device but those lost and revoked.
    public var members: [SimDevice] { devices.filter { !$0.isRevoked } }
    let account: SigningKeyPair
    let backupKey: SecretBytes
    /// A tick while frames are on their way or a pull runs.
    public let tickMilliseconds: UInt64 = 100
    /// A tick while the network is quiet: the engines' timers (debounce,
    /// heartbeat, retries) still fire, at most this much late. Most of a
    /// history is quiet, so this is most of the simulator's speed.
    public let quietTickMilliseconds: UInt64 = 500
    private let startMs: UInt64

    public static let deviceNames = ["ada", "ben", "cy", "dee", "eli", "fay", "gus", "hal"]

    /// `configuration`: the engines' knobs (a seed may shrink the response
    /// budget or the key-list threshold; the timers stay as shipped).
    public init(seed: UInt64, base: String, configuration: SyncConfiguration, maxFrameSize: Int) {
        self.seed = seed
        self.base = base
        self.configuration = configuration
        clock = SimClock()
        startMs = clock.monotonicMilliseconds()
        trace = SimulationTrace(clock: clock)
        network = FaultyRelay(clock: clock, random: SeededRandom(seed: SeedMix.mix(seed, 0x4E45_54)), maxFrameSize: maxFrameSize)
        account = try! SigningKeyPair(seed: SecretBytes(copying: SeedMix.keyMaterial(seed, "account")))
        backupKey = SecretBytes(copying: SeedMix.keyMaterial(seed, "backup"))
        cloud = SimCloud(base: base, accountID: SHA256.hash(account.publicKey.bytes))
    }

    /// Simulated milliseconds since the fleet started.
    public var elapsedMs: UInt64 { clock.monotonicMilliseconds() - startMs }

    // MARK: Devices

    /// Adds a device. The first ones are paired at set-up (every roster
    /// row everywhere); a device that joins later gets what an invite
    /// carries (the inviter's roster) and introduces itself.
    @discardableResult
    public func addDevice(invitedBy inviter: SimDevice? = nil, knowing others: [SimDevice] = [], clockOffsetMs: Int64 = 0) throws -> SimDevice {
        let slot = devices.count
        let name = SimulatedFleet.deviceNames[slot % SimulatedFleet.deviceNames.count] + (slot >= 8 ? "\(slot)" : "")
        let identity = SimDevice.makeIdentity(seed: seed, slot: slot, account: account, backupKey: backupKey)
        let home = DeviceHome(path: base + "/" + name)
        guard mkdir(home.path, 0o700) == 0 else { throw SimulationError("cannot create \(home.path): errno \(errno)") }
        try home.prefs.save(Prefs(deviceName: name))
        let device = SimDevice(slot: slot, name: name, identity: identity, home: home, joinedAtMs: elapsedMs,
                               clock: DeviceClock(fleet: clock, offsetMs: clockOffsetMs))
        try openStore(device, create: true)
        let store = device.store!
        let certificate = identity.signedCertificate(name: name, role: "device", issuedAt: device.clock.now())
        try store.putRosterEntry(DeviceRecord(name: name, certificate: certificate), key: identity.deviceID)
        if let inviter, let inviterStore = inviter.store {
            try store.apply(try inviterStore.rows(.devices, from: [], to: nil))
        }
        for other in others {
            if let otherStore = other.store {
                try store.apply(try otherStore.rows(.devices, from: [], to: nil).filter { $0.key == other.id })
                try otherStore.apply(try store.rows(.devices, from: [], to: nil).filter { $0.key == identity.deviceID })
            }
        }
        devices.append(device)
        return device
    }

    func openStore(_ device: SimDevice, create: Bool = false, restoring: Bool = false) throws {
        device.openings += 1
        let random = SeededRandom(seed: SeedMix.mix(seed, 0x53_54_4F_52_45, UInt64(device.slot), UInt64(device.openings)))
        let disk = PowerLossDisk(forwardsSync: false)
        device.disk = disk
        device.store = try ReplicaStore(path: device.home.databasePath, deviceID: device.id, create: create, clock: device.clock,
                                        random: random, vfs: disk, restoring: restoring)
        // The generation is the prefs' (a restore put older prefs back),
        // whether or not an engine starts now.
        device.generation.set((try? device.home.prefs.load().generation) ?? 0)
    }

    /// Attaches a fresh engine (as a process start would: it reads the
    /// persistent state the last one left in the device directory).
    public func goOnline(_ device: SimDevice) throws {
        guard device.engine == nil else { return }
        if device.store == nil { try openStore(device) }
        device.engineStarts += 1
        let random = SeededRandom(seed: SeedMix.mix(seed, 0x45_4E_47, UInt64(device.slot), UInt64(device.engineStarts)))
        let generation = device.generation
        generation.set((try? device.home.prefs.load().generation) ?? 0)
        let name = device.name
        let trace = self.trace
        var deps = SyncEngine.Dependencies(
            store: device.store!, identity: device.identity, relay: network.endpoint(for: device.slot), clock: device.clock, random: random,
            generation: { generation.value },
            log: { [weak self, weak device] line in
                trace.record(name, "log: " + line)
                if let self, let device { self.onLog?(device, line) }
            },
            statusPath: device.home.path + "/sync-status.json", statePath: device.home.path + "/sync-state.json",
            relayDescription: "simulated")
        deps.trace = { line in trace.record(name, "frame " + line) }
        // The real barrier and anchor code, on the simulated cloud folder.
        deps.cloud = CloudFolder(path: cloud.view(of: device.name), accountID: device.identity.userIDHash)
        deps.isAnchorEnabled = { true }
        deps.rotationKeys = try device.rotationKeys()
        let homePath = device.home.path
        deps.keepRotationKeys = { try $0.save(keysPath: homePath) }
        let prefs = device.home.prefs
        deps.setGeneration = { value in
            try prefs.setGeneration(value)
            generation.set(value)
        }
        let engine = SyncEngine(deps, configuration: configuration)
        device.engine = engine
        if device.cutsPowerOnNextHold { armHoldPowerCut(device) }
        try engine.attach()
    }

    /// Makes `device` a homebase as 'quire role homebase' does: its
    /// certificate re-signed with the role, its prefs, and (as pairing
    /// would) its roster row on every other device.
    public func makeHomebase(_ device: SimDevice) throws {
        guard let store = device.store else { throw SimulationError("\(device.name) is powered off") }
        let certificate = device.identity.signedCertificate(name: device.name, role: "homebase", issuedAt: device.clock.now())
        try store.putRosterEntry(DeviceRecord(name: device.name, certificate: certificate), key: device.id)
        _ = try device.home.prefs.update { $0.role = .homebase }
        let row = try store.rows(.devices, from: [], to: nil).filter { $0.key == device.id }
        for other in devices where other !== device { try other.store?.apply(row) }
    }

    /// The next body `device` (a homebase) receives cuts its power after it
    /// arrived and before it is committed: the disk loses what it did not
    /// sync and its process sends nothing more; the device restarts after
    /// the step. Stays armed across engine restarts until it fires.
    public func armHoldPowerCut(_ device: SimDevice) {
        device.cutsPowerOnNextHold = true
        guard let engine = device.engine else { return }
        let network = self.network
        var faults = OffloadFaults()
        faults.beforeHold = { [weak self, weak device] in
            guard let device, device.cutsPowerOnNextHold, let disk = device.disk else { return }
            self?.beforePowerCut?(device)
            device.cutsPowerOnNextHold = false
            device.powerCutPending = true
            network.silenced.insert(device.slot)
            try? disk.powerLoss()
        }
        engine.setOffloadFaults(faults)
    }

    /// Stops the engine; the replica stays open (offline edits go on).
    public func goOffline(_ device: SimDevice) {
        device.engine?.stop()
        device.engine = nil
    }

    /// Engine stopped and replica closed: the files are at rest.
    public func powerOff(_ device: SimDevice) {
        goOffline(device)
        device.store = nil   // the last reference: the connection closes here
    }

    /// Reopens the replica, and the engine if `online`.
    public func powerOn(_ device: SimDevice, online: Bool, restoring: Bool = false) throws {
        if device.store == nil { try openStore(device, restoring: restoring) }
        if online { try goOnline(device) }
    }

    /// Copies the device directory aside (the device is powered off for it
    /// and comes back as it was). Returns the copy's path.
    @discardableResult
    public func backUp(_ device: SimDevice) throws -> String {
        let wasOnline = device.isOnline
        powerOff(device)
        let destination = base + "/backups/\(device.name)-\(device.backups.count + 1)"
        try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
        for file in SimDevice.directoryFiles where FileManager.default.fileExists(atPath: device.home.path + "/" + file) {
            try FileManager.default.copyItem(atPath: device.home.path + "/" + file, toPath: destination + "/" + file)
        }
        device.backups.append(destination)
        try powerOn(device, online: wasOnline)
        return destination
    }

    /// Puts a backup copy back in place of the device directory's files and
    /// starts the device again. `byCopy`: every file goes back, as a VM
    /// snapshot would put it back (the sync state's session stamp too), into
    /// the same files: the replica cannot tell by its file that it is a copy
    /// (a copy as new files, `cp -a`, is `asNewFiles`, which it can tell:
    /// ReplicaStore+FileIdentity.swift); otherwise only what `quire restore`
    /// puts back (replica and prefs: a `DeviceBackup` never holds the sync
    /// state), opened as a restore, which the caller finishes.
    /// Returns where the files it replaced went (`quire restore` moves them
    /// aside too, and keeps the bodies held there); nil by copy, which
    /// overwrites or deletes them.
    @discardableResult
    public func restore(_ device: SimDevice, from copy: String, byCopy: Bool, asNewFiles: Bool = false) throws -> String? {
        let wasOnline = device.isOnline
        powerOff(device)
        let fm = FileManager.default
        let files = byCopy ? SimDevice.directoryFiles : SimDevice.directoryFiles.filter { !$0.hasPrefix("sync-") }
        var aside: String?
        if !byCopy {
            device.restores += 1
            let dir = base + "/replaced/\(device.name)-\(device.restores)"
            try fm.createDirectory(atPath: dir, withIntermediateDirectories: true)
            aside = dir
        }
        let inPlace = byCopy && !asNewFiles
        for file in files where fm.fileExists(atPath: device.home.path + "/" + file) {
            if let aside {
                try fm.moveItem(atPath: device.home.path + "/" + file, toPath: aside + "/" + file)
            } else if !inPlace || !fm.fileExists(atPath: copy + "/" + file) {
                try fm.removeItem(atPath: device.home.path + "/" + file)
            }
        }
        for file in files where fm.fileExists(atPath: copy + "/" + file) {
            let target = device.home.path + "/" + file
            if inPlace && fm.fileExists(atPath: target) {
                // Same file, the copy's bytes (the inode and birth time stay).
                let bytes = try Data(contentsOf: URL(fileURLWithPath: copy + "/" + file))
                guard let handle = FileHandle(forWritingAtPath: target) else { throw CocoaError(.fileWriteUnknown) }
                try handle.truncate(atOffset: 0)
                try handle.write(contentsOf: bytes)
                try handle.close()
            } else {
                try fm.copyItem(atPath: copy + "/" + file, toPath: target)
            }
        }
        try powerOn(device, online: wasOnline, restoring: !byCopy)
        return aside
    }

    // MARK: Time

    /// One tick: deliver what is due, step every online engine (in slot
    /// order), move the clock on. Returns the milliseconds it moved.
    @discardableResult
    public func tick() -> UInt64 {
        network.deliverReady()
        for device in devices {
            device.engine?.step()
            if device.powerCutPending {
                device.powerCutPending = false
                onPowerCut?(device)
                network.silenced.remove(device.slot)
            }
        }
        let now = clock.monotonicMilliseconds()
        let busy = (network.nextDueMs().map { $0 <= now + quietTickMilliseconds } ?? false)
            || devices.contains { $0.engine?.hasActivePulls ?? false }
        let step = busy ? tickMilliseconds : quietTickMilliseconds
        clock.advance(ms: step)
        return step
    }

    /// Runs the fleet for (at least) `ms` of simulated time.
    public func run(ms: UInt64) {
        var elapsed: UInt64 = 0
        while elapsed < ms { elapsed += tick() }
    }

    /// Every device asleep for `ms` (a closed lid): no engine steps, frames
    /// on their way stay on their way, then one step wakes everyone.
    public func sleepAll(ms: UInt64) {
        clock.advance(ms: ms)
    }

    /// True when every online device holds the same digest and every
    /// engine knows it (its siblings hold it too, nothing is being pulled).
    public func isSettled() -> Bool {
        let online = members.filter(\.isOnline)
        func digest(_ d: SimDevice) -> [UInt8]? {
            let generation = (try? d.home.prefs.load().generation) ?? 0
            return try? d.store?.digest(generation: generation).encoded()
        }
        guard let first = online.first, let reference = digest(first) else { return online.isEmpty }
        for device in online {
            guard digest(device) == reference, device.engine!.isConverged() else { return false }
        }
        return true
    }

    /// Removes the simulated disk.
    public func tearDown() {
        for device in devices { powerOff(device) }
        network.close()
        try? FileManager.default.removeItem(atPath: base)
    }
}

/// A failure of the simulator itself (not of the fleet under test).
public struct SimulationError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
