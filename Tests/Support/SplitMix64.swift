// The one SplitMix64 lives in QuireSimulation (the fleet simulator draws
// every seeded choice from it); the test targets see it from here, and only
// it, so their own SeededRandom and SimClock helpers do not clash.
@_exported import struct QuireSimulation.SplitMix64
