package offsets

import (
	"os"
	"testing"

	"github.com/passbook-log/passbook/internal/leakcheck"
)

// TestMain fails the package's tests when a goroutine they started is
// still running after the last one.
func TestMain(m *testing.M) { os.Exit(leakcheck.Run(m)) }
