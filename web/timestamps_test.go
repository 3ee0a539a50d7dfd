package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
)

// POST /api/topics takes Kafka's message.timestamp.before.max.ms and
// after.max.ms, and appends outside them answer 400 invalid_timestamp.
func TestTopics_Create_TimestampLimits(t *testing.T) {
	e := newEnv(t, nil)
	r := e.postJSON("/api/topics", map[string]any{"name": "strict", "config": map[string]any{
		"message.timestamp.before.max.ms": 86_400_000, "message.timestamp.after.max.ms": 60_000,
	}})
	e.want(r, http.StatusCreated, "")
	var info passbook.TopicInfo
	r.decode(t, &info)
	if info.Config.TimestampBeforeMax != 24*time.Hour || info.Config.TimestampAfterMax != time.Minute {
		t.Fatalf("created with before %v, after %v; want 24h, 1m", info.Config.TimestampBeforeMax, info.Config.TimestampAfterMax)
	}
	ahead := time.Now().Add(2 * time.Minute).UTC().Format(time.RFC3339)
	e.want(e.do("POST", "/api/topics/strict/records", "application/json", `{"records": [{"value": "x", "timestamp": "`+ahead+`"}]}`), http.StatusBadRequest, CodeInvalidTimestamp)
	e.want(e.do("POST", "/api/topics/strict/records", "application/json", `{"records": [{"value": "x"}]}`), http.StatusOK, "")
	r = e.postJSON("/api/topics", map[string]any{"name": "bad", "config": map[string]any{"message.timestamp.before.max.ms": -1}})
	e.want(r, http.StatusBadRequest, CodeInvalidConfig)
	if !strings.Contains(string(r.body), "message.timestamp") {
		t.Errorf("the refusal does not name the config: %s", r.body)
	}
}
