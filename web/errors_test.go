package web

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

// TestToAPIError_Corrupt: damaged data is a 500 with its own code, so
// that a client can tell it from a passing failure, and the message
// points at the tools.
func TestToAPIError_Corrupt(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("read orders/0: %w", storage.ErrCorrupt),
		fmt.Errorf("consumer billing: %w", offsets.ErrCorrupt),
	} {
		e := toAPIError(err)
		if e.Status != http.StatusInternalServerError || e.Code != CodeCorrupt {
			t.Errorf("%v: got %d %s, want 500 %s", err, e.Status, e.Code, CodeCorrupt)
		}
	}
}
