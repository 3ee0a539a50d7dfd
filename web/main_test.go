package web

import (
	"os"
	"testing"

	"github.com/passbook-log/passbook/internal/leakcheck"
)

// TestMain fails the package's tests when a goroutine they started is
// still running after the last one. FuzzHTTP's server serves every input
// of a fuzzing process: it is closed here, after the last.
func TestMain(m *testing.M) {
	os.Exit(leakcheck.Run(m, func() {
		fe := fuzzServer()
		fe.s.Close()
		fe.db.Close()
	}))
}
