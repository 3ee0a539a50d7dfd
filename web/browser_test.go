package web

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	thousandsfmt "github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

var (
	updateScreenshot = flag.Bool("update-screenshot", false, "save the dashboard's picture as ../docs/dashboard.png")
	screenshotDir    = flag.String("screenshot-dir", "", "also save the other views (dark, a consumer's page, a 200-partition topic) here")
)

// tapeState is what the page shows of one partition, read from the DOM.
type tapeState struct {
	Head    int64 `json:"head"`
	Start   int64 `json:"start"`
	Cursors []struct {
		Consumer string  `json:"consumer"`
		Offset   int64   `json:"offset"`
		Lag      int64   `json:"lag"`
		X        float64 `json:"x"`     // the cursor's place on the tape, 0 to 1, from its drawn position
		Label    string  `json:"label"` // the text next to it
	} `json:"cursors"`
}

const readTape = `(() => {
  const tape = document.querySelector('.tape[data-topic="orders"][data-partition="0"]');
  if (!tape) return null;
  const tr = tape.getBoundingClientRect();
  return {
    head: +tape.dataset.head, start: +tape.dataset.start,
    cursors: [...tape.querySelectorAll('.cursor')].map((c) => {
      const r = c.getBoundingClientRect();
      const label = tape.parentElement.querySelector('.clabel[data-consumer="' + CSS.escape(c.dataset.consumer) + '"]');
      return { consumer: c.dataset.consumer, offset: +c.dataset.offset, lag: +c.dataset.lag,
        x: (r.left - tr.left) / tr.width, label: label ? label.textContent : "" };
    }),
  };
})()`

// cursorAt is a JS condition: consumer's cursor on orders/0 at offset with lag.
func cursorAt(consumer string, offset, lag int64) string {
	return fmt.Sprintf(`document.querySelector('.tape[data-topic="orders"] .cursor[data-consumer="%s"][data-offset="%d"][data-lag="%d"]')`, consumer, offset, lag)
}

// TestDashboard_Browser opens the dashboard in headless Chromium over a
// topic of 100,000 records and the course's two consumers, orders-writer
// at the end and analytics-v2 at 0 then partway, and checks from the DOM
// that both cursors stand at their offsets with the right lag, and that
// the picture follows commits and appends within 2 s.
func TestDashboard_Browser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	const width, height = 1440, 900
	b := startBrowser(t, width, height)
	// The data is there before the server starts, as after a restart:
	// the charts' history begins with the server.
	var orders, payments, telemetry, profiles *passbook.Topic
	e := newEnvSetup(t, nil, &Options{EventInterval: defaultEventInterval}, func(db *passbook.DB) {
		orders = courseTopic(t, db)
		payments = retainedTopic(t, db)
		telemetry = wideTopic(t, db)
		profiles = compactedTopic(t, db)
	})
	ctx := context.Background()

	b.navigate(e.url + "/")
	b.waitFor(cursorAt("orders-writer", 100_000, 0)+` && `+cursorAt("analytics-v2", 0, 100_000), 10*time.Second)
	var st tapeState
	b.eval(readTape, &st)
	checkTape(t, st, 100_000, map[string][2]int64{"orders-writer": {100_000, 0}, "analytics-v2": {0, 100_000}})

	// analytics-v2 reads partway: its cursor moves within 2 s of the commit.
	a, err := consumer.New(ctx, orders, e.db.Offsets(), consumer.Options{Name: "analytics-v2", Commit: consumer.CommitEvery, EveryN: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Drain(ctx, func(_ context.Context, m consumer.Message) error {
		if m.Offset == 41_999 {
			return consumer.Stop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	moved := b.waitFor(cursorAt("analytics-v2", 42_000, 58_000), 2*time.Second)
	b.eval(readTape, &st)
	checkTape(t, st, 100_000, map[string][2]int64{"orders-writer": {100_000, 0}, "analytics-v2": {42_000, 58_000}})

	// 1,000 records appended: the head and both lags move within 2 s.
	fill(t, orders, 0, 1_000)
	appended := b.waitFor(`document.querySelector('.tape[data-topic="orders"][data-head="101000"]') && `+
		cursorAt("orders-writer", 100_000, 1_000)+` && `+cursorAt("analytics-v2", 42_000, 59_000), 2*time.Second)
	b.eval(readTape, &st)
	checkTape(t, st, 101_000, map[string][2]int64{"orders-writer": {100_000, 1_000}, "analytics-v2": {42_000, 59_000}})
	t.Logf("the page showed the commit after %v and the append after %v (event interval %v)", moved, appended, e.s.o.EventInterval)

	// Retention's deleted range is drawn, hatched, from 0 to the log start.
	var gone struct{ Start, Head, W float64 }
	b.eval(`(() => { const t = document.querySelector('.tape[data-topic="payments"][data-partition="0"]'), g = t.querySelector('.gone');
		return {start: +t.dataset.start, head: +t.dataset.head, w: g ? g.getBoundingClientRect().width / t.getBoundingClientRect().width : -1}; })()`, &gone)
	if l := mustLog(t, payments, 0); gone.Start != float64(l.StartOffset()) || gone.Start == 0 || gone.W < gone.Start/gone.Head-0.005 || gone.W > gone.Start/gone.Head+0.005 {
		t.Errorf("payments/0 drawn from %v to %v with %.3f deleted; want %d to %d with %.3f", gone.Start, gone.Head, gone.W, l.StartOffset(), l.Head(), float64(l.StartOffset())/float64(l.Head()))
	}

	// A compacted topic shows the range where only each key's newest
	// record is kept, from the log start to the cleaned point.
	var comp struct {
		Found      bool
		Left, W    float64
		Tip, Label string
	}
	b.eval(`(() => { const t = document.querySelector('.tape[data-topic="profiles"][data-partition="0"]'), c = t && t.querySelector('.compacted');
		if (!c) return {found: false};
		const tr = t.getBoundingClientRect(), cr = c.getBoundingClientRect();
		return {found: true, left: (cr.left - tr.left) / tr.width, w: cr.width / tr.width, tip: c.dataset.tip, label: c.textContent}; })()`, &comp)
	pl := mustLog(t, profiles, 0)
	cleaned := pl.CleanerStats().CleanedTo
	if want := float64(cleaned) / float64(pl.Head()); !comp.Found || comp.Left > 0.005 || comp.W < want-0.005 || comp.W > want+0.005 ||
		!strings.Contains(comp.Tip, "newest record") || !strings.Contains(comp.Label, thousands(cleaned)) {
		t.Errorf("profiles/0 compacted band = %+v; want it from 0 over %.3f of the tape, labelled %s", comp, want, thousands(cleaned))
	}

	// Numbers are written for people, and the consumers are listed.
	var texts []string
	b.eval(`[...document.querySelectorAll('.clabel[data-topic="orders"], .clist a')].map((x) => x.textContent.replace(/\s+/g, " ").trim())`, &texts)
	for _, want := range []string{"analytics-v2 42,000 · lag 59,000", "orders-writer 100,000 · lag 1,000"} {
		if !containsString(texts, want) {
			t.Errorf("no label %q among %q", want, texts)
		}
	}

	// The 200-partition topic: a page of 12 tapes, a pager, a filter.
	var parts struct {
		Tapes int
		Bar   string
	}
	const telemetryParts = `({tapes: document.querySelectorAll('section.topic[data-topic="telemetry"] .tape').length,
		bar: document.querySelector('section.topic[data-topic="telemetry"] .parts-bar')?.textContent.replace(/\s+/g, " ").trim()})`
	b.eval(telemetryParts, &parts)
	if parts.Tapes != PageSizeForTest || !contains(parts.Bar, "Partitions 1–12 of 200") {
		t.Errorf("telemetry shows %d tapes, bar %q; want a page of 12 of 200", parts.Tapes, parts.Bar)
	}
	b.eval(`document.querySelector('section.topic[data-topic="telemetry"] [data-act="next"]').click()`, nil)
	b.waitFor(`document.querySelector('section.topic[data-topic="telemetry"] .tape[data-partition="12"]')`, 2*time.Second)
	b.eval(`(() => { const f = document.getElementById("filter"); f.value = "analytics"; f.dispatchEvent(new Event("input")); })()`, nil)
	b.waitFor(`!document.querySelector('section.topic[data-topic="telemetry"]') && document.querySelector('section.topic[data-topic="orders"]')`, 2*time.Second)
	b.eval(`(() => { const f = document.getElementById("filter"); f.value = ""; f.dispatchEvent(new Event("input")); })()`, nil)

	// A consumer's page: its standing per partition.
	b.eval(`location.hash = "#/consumer/analytics-v2"`, nil)
	b.waitFor(`document.querySelector('.chead h1')?.textContent.includes("analytics-v2") && document.querySelector('table.parts td.lag')?.textContent === "59,000"`, 3*time.Second)

	if *updateScreenshot || *screenshotDir != "" {
		traffic(t, e, orders, telemetry)
		b.eval(`location.hash = "#/"`, nil)
		b.waitFor(`document.querySelector('section.topic[data-topic="orders"] .tape')`, 3*time.Second)
		time.Sleep(time.Second)
		if *updateScreenshot {
			b.screenshot(filepath.Join("..", "docs", "dashboard.png"), width, 1400)
		}
		if d := *screenshotDir; d != "" {
			b.screenshot(filepath.Join(d, "overview-light.png"), width, 1400)
			b.eval(`document.getElementById("theme").click()`, nil)
			time.Sleep(500 * time.Millisecond)
			b.screenshot(filepath.Join(d, "overview-dark.png"), width, 1400)
			b.eval(`document.getElementById("theme").click(); location.hash = "#/consumer/analytics-v2"`, nil)
			time.Sleep(time.Second)
			b.screenshot(filepath.Join(d, "consumer.png"), width, 1400)
			b.eval(`location.hash = "#/topic/telemetry"`, nil)
			time.Sleep(time.Second)
			b.screenshot(filepath.Join(d, "telemetry.png"), width, 1400)
		}
	}
}

// PageSizeForTest is the dashboard's partitions per page (app.js PAGE).
const PageSizeForTest = 12

// checkTape compares what the page drew with what was done: the head,
// each cursor's offset and lag in its data and its label, and its place
// on the tape (committed / head, within a pixel or so).
func checkTape(t *testing.T, st tapeState, head int64, want map[string][2]int64) {
	t.Helper()
	if st.Head != head || st.Start != 0 {
		t.Errorf("tape from %d to %d, want 0 to %d", st.Start, st.Head, head)
	}
	if len(st.Cursors) != len(want) {
		t.Errorf("%d cursors, want %d: %+v", len(st.Cursors), len(want), st.Cursors)
	}
	for _, c := range st.Cursors {
		w, ok := want[c.Consumer]
		if !ok {
			t.Errorf("unexpected cursor %+v", c)
			continue
		}
		if c.Offset != w[0] || c.Lag != w[1] {
			t.Errorf("%s at %d with lag %d, want %d and %d", c.Consumer, c.Offset, c.Lag, w[0], w[1])
		}
		if x := float64(w[0]) / float64(head); c.X < x-0.002 || c.X > x+0.002 {
			t.Errorf("%s drawn at %.4f of the tape, want %.4f", c.Consumer, c.X, x)
		}
		if label := fmt.Sprintf("%s %s · lag %s", c.Consumer, thousands(w[0]), thousands(w[1])); normalize(c.Label) != label {
			t.Errorf("%s labelled %q, want %q", c.Consumer, c.Label, label)
		}
	}
}

// courseTopic makes the course's picture: "orders" with 100,000 records,
// orders-writer having read them all and analytics-v2 at 0.
func courseTopic(t *testing.T, db *passbook.DB) *passbook.Topic {
	t.Helper()
	ctx := context.Background()
	orders, err := db.CreateTopic("orders", passbook.TopicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, orders, 0, 100_000)
	w, err := consumer.New(ctx, orders, db.Offsets(), consumer.Options{Name: "orders-writer", Commit: consumer.CommitEvery, EveryN: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Drain(ctx, func(context.Context, consumer.Message) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.Seek(ctx, db.Offsets(), orders, "analytics-v2", consumer.Earliest(), nil); err != nil {
		t.Fatal(err)
	}
	return orders
}

// wideTopic makes "telemetry", of 200 partitions, which the page shows a
// page at a time, read by two consumers.
func wideTopic(t *testing.T, db *passbook.DB) *passbook.Topic {
	t.Helper()
	topic, err := db.CreateTopic("telemetry", passbook.TopicConfig{Partitions: 200})
	if err != nil {
		t.Fatal(err)
	}
	commits := map[offsets.Key]int64{}
	for p := range int32(200) {
		fill(t, topic, p, 20+int(p%7)*10)
		for _, c := range []string{"sessionizer", "ad-attribution"} {
			commits[offsets.Key{Consumer: c, Topic: "telemetry", Partition: p}] = int64(p % 20)
		}
	}
	if err := db.Offsets().CommitMany(context.Background(), commits); err != nil {
		t.Fatal(err)
	}
	return topic
}

// compactedTopic makes "profiles": a compacted topic where 200 keys were
// written 20 times each, compacted once.
func compactedTopic(t *testing.T, db *passbook.DB) *passbook.Topic {
	t.Helper()
	topic, err := db.CreateTopic("profiles", passbook.TopicConfig{CleanupPolicy: passbook.CleanupCompact, SegmentBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]passbook.Record, 0, 200)
	for round := range 20 {
		recs = recs[:0]
		for k := range 200 {
			recs = append(recs, passbook.Record{Key: fmt.Appendf(nil, "user-%03d", k), Value: fmt.Appendf(nil, "profile v%d", round)})
		}
		if _, err := topic.AppendTo(0, recs, storage.DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := topic.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	return topic
}

// retainedTopic makes "payments": three partitions whose oldest segments
// retention has deleted, read by three consumers, one of which missed
// records.
func retainedTopic(t *testing.T, db *passbook.DB) *passbook.Topic {
	t.Helper()
	ctx := context.Background()
	if err := db.Offsets().Commit(ctx, offsets.Key{Consumer: "refunds", Topic: "payments", Partition: 0}, 1_500); err != nil {
		t.Fatal(err)
	}
	topic, err := db.CreateTopic("payments", passbook.TopicConfig{Partitions: 3, SegmentBytes: 8 << 10, RetentionBytes: 40 << 10})
	if err != nil {
		t.Fatal(err)
	}
	commits := map[offsets.Key]int64{}
	for p := range int32(3) {
		for range 12 {
			fill(t, topic, p, 500)
		}
		l := mustLog(t, topic, p)
		if _, err := l.Retain(); err != nil {
			t.Fatal(err)
		}
		commits[offsets.Key{Consumer: "ledger", Topic: "payments", Partition: p}] = l.Head()
		commits[offsets.Key{Consumer: "fraud-check", Topic: "payments", Partition: p}] = l.Head() - 1_200 - int64(p)*700
	}
	if err := db.Offsets().CommitMany(ctx, commits); err != nil {
		t.Fatal(err)
	}
	return topic
}

// traffic makes a few seconds of appends and reads, so the screenshot's
// charts have something to draw.
func traffic(t *testing.T, e *env, orders, telemetry *passbook.Topic) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
	defer cancel()
	w, err := consumer.New(ctx, orders, e.db.Offsets(), consumer.Options{Name: "orders-writer", Commit: consumer.CommitEvery, EveryD: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, func(context.Context, consumer.Message) error { return nil }) }()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; ctx.Err() == nil; i++ {
		n := 150 + int(120*float64(i%40)/40) + rng.IntN(60)
		fill(t, orders, 0, n)
		fill(t, telemetry, int32(rng.IntN(200)), 40+rng.IntN(40))
		time.Sleep(100 * time.Millisecond)
	}
	if err := <-done; err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	w.Close()
}

func thousands(n int64) string { return thousandsfmt.Int(n) }

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func containsString(list []string, s string) bool { return slices.Contains(list, s) }
