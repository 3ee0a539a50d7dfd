package passbook_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
)

// A topic's message.timestamp.before.max.ms and after.max.ms are kept in
// topic.json under Kafka's names and units, survive a reopen, and refuse
// records stamped outside them.
func TestTopicConfig_TimestampLimits(t *testing.T) {
	dir := t.TempDir()
	open := func() *passbook.DB {
		t.Helper()
		db, err := passbook.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	cfg := passbook.TopicConfig{TimestampBeforeMax: 24 * time.Hour, TimestampAfterMax: passbook.NoTimestampLimit}
	tp, err := db.CreateTopic("strict", cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tests := []struct {
		name string
		ts   time.Time
		want error
	}{
		{"now", now, nil},
		{"a day and a minute ago", now.Add(-24*time.Hour - time.Minute), storage.ErrInvalidTimestamp},
		{"1970", time.UnixMilli(1), storage.ErrInvalidTimestamp},
		{"year 9999: after.max.ms is no limit", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), nil},
	}
	for _, tt := range tests {
		_, err := tp.Append(passbook.Record{Value: []byte("x"), Timestamp: tt.ts})
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	b, err := os.ReadFile(filepath.Join(dir, "topics", "strict", "topic.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"message.timestamp.before.max.ms": 86400000`, `"message.timestamp.after.max.ms": 9223372036854775807`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("topic.json has no %s:\n%s", want, b)
		}
	}
	db = open()
	defer db.Close()
	tp, err = db.Topic("strict")
	if err != nil {
		t.Fatal(err)
	}
	if got := tp.Config(); got.TimestampBeforeMax != cfg.TimestampBeforeMax || got.TimestampAfterMax != cfg.TimestampAfterMax {
		t.Errorf("reopened config: before %v, after %v; want %v, %v", got.TimestampBeforeMax, got.TimestampAfterMax, cfg.TimestampBeforeMax, cfg.TimestampAfterMax)
	}
	if _, err := tp.Append(passbook.Record{Value: []byte("x"), Timestamp: time.UnixMilli(1)}); !errors.Is(err, storage.ErrInvalidTimestamp) {
		t.Errorf("after reopen, 1970: err = %v, want ErrInvalidTimestamp", err)
	}

	// A default topic: Kafka 4's defaults, after.max.ms 1 hour.
	def, err := db.CreateTopic("default", passbook.TopicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := def.Append(passbook.Record{Value: []byte("x"), Timestamp: time.UnixMilli(1)}); err != nil {
		t.Errorf("1970 on a default topic: %v", err)
	}
	if _, err := def.Append(passbook.Record{Value: []byte("x"), Timestamp: now.Add(2 * time.Hour)}); !errors.Is(err, storage.ErrInvalidTimestamp) {
		t.Errorf("two hours ahead on a default topic: err = %v, want ErrInvalidTimestamp", err)
	}
	for _, bad := range []passbook.TopicConfig{{TimestampBeforeMax: -time.Second}, {TimestampAfterMax: time.Microsecond}} {
		if _, err := db.CreateTopic("bad", bad); !errors.Is(err, passbook.ErrInvalidConfig) {
			t.Errorf("CreateTopic(%+v): err = %v, want ErrInvalidConfig", bad, err)
		}
	}
}
