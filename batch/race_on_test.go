//go:build race

package batch

// raceEnabled: the race detector changes allocation counts (sync.Pool
// drops items at random).
const raceEnabled = true
