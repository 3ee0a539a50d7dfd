package offsets

import (
	"path/filepath"
	"testing"
)

// The direct connection runs with the settings the package doc promises.
func TestOpen_Pragmas(t *testing.T) {
	tests := []struct {
		name             string
		opts             *Options
		useDB            bool
		wantSync, wantLk string
	}{
		{"Default", nil, false, "1", "exclusive"},
		{"SyncFull", &Options{Synchronous: SyncFull}, false, "2", "exclusive"},
		{"Shared", &Options{Shared: true}, false, "1", "normal"},
		{"AfterDB", nil, true, "1", "normal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(filepath.Join(t.TempDir(), "offsets.db"), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tt.useDB {
				var got string
				if err := s.DB().QueryRow(`PRAGMA synchronous`).Scan(&got); err != nil || got != tt.wantSync {
					t.Errorf("pool synchronous = %q, %v; want %q", got, err, tt.wantSync)
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, p := range []struct{ pragma, want string }{
				{"journal_mode", "wal"},
				{"synchronous", tt.wantSync},
				{"locking_mode", tt.wantLk},
				{"page_size", "512"},
			} {
				got, err := pragma(s.mu.conn, "PRAGMA "+p.pragma)
				if err != nil || got != p.want {
					t.Errorf("PRAGMA %s = %q, %v; want %q", p.pragma, got, err, p.want)
				}
			}
		})
	}
}
