//go:build race

package kafka

// raceEnabled: the race detector makes each request several times
// slower; the longest process tests scale down under it.
const raceEnabled = true
