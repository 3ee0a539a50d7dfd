package web

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
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
	const width, height = 1400, 900
	began := time.Now()
	b := startBrowser(t, width, height)
	// The data is there before the server starts, as after a restart:
	// the charts' history begins with the server.
	var orders, payments, profiles *passbook.Topic
	e := newEnvSetup(t, smallSegments, &Options{EventInterval: defaultEventInterval}, func(db *passbook.DB) {
		orders = courseTopic(t, db)
		payments = retainedTopic(t, db)
		wideTopic(t, db)
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

	// Partitions are labelled as partitions, not bare numbers that read
	// like offsets.
	var plabels []string
	b.eval(`[...document.querySelectorAll('section.topic[data-topic="payments"] .plabel')].map((x) => x.textContent + " (" + x.title + ")")`, &plabels)
	if want := []string{"p0 (partition 0)", "p1 (partition 1)", "p2 (partition 2)"}; !slices.Equal(plabels, want) {
		t.Errorf("payments' partitions labelled %q, want %q", plabels, want)
	}

	// Where two consumers lag on one partition, each lag bar is in its
	// consumer's colour (the colour of its chip, the legend), and no two
	// bars overlap, so none mixes into a colour nobody has.
	checkLagBars(t, b, "payments", 0, []string{"fraud-check", "refunds"})
	checkLagBars(t, b, "orders", 0, []string{"analytics-v2", "orders-writer"})

	// Numbers are written for people: thousands separators, "1 record"
	// but "2 records".
	checkText(t, b, `document.querySelector(".bar").innerText + "\n" + document.getElementById("main").innerText`)

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
	b.waitFor(`document.querySelector('.big[data-x-max]')`, 3*time.Second)
	checkTimeAxis(t, b, began)
	checkText(t, b, `document.querySelector(".bar").innerText + "\n" + document.getElementById("main").innerText`)
}

// smallSegments lets the fixtures make topics of many small segments
// (retention and compaction work segment by segment).
var smallSegments = &passbook.Options{MinSegmentBytes: 8 << 10}

// checkLagBars checks topic/partition's lag bars: one per consumer in
// want (those that lag), each in the colour of its consumer's chip, no
// two overlapping.
func checkLagBars(t *testing.T, b *browser, topic string, partition int, want []string) {
	t.Helper()
	type bar struct {
		Consumer, Color, Chip string
		Left, Right           float64
		Top, Bottom           float64
	}
	var bars []bar
	b.eval(fmt.Sprintf(`[...document.querySelectorAll('.tape[data-topic="%s"][data-partition="%d"] .lagspan')].map((x) => {
		const r = x.getBoundingClientRect(), chip = document.querySelector('section.topic[data-topic="%s"] .chip[data-consumer="' + CSS.escape(x.dataset.consumer) + '"] i');
		return {consumer: x.dataset.consumer, color: getComputedStyle(x).backgroundColor, chip: chip ? getComputedStyle(chip).backgroundColor : "",
			left: r.left, right: r.right, top: r.top, bottom: r.bottom};
	})`, topic, partition, topic), &bars)
	var got []string
	for i, x := range bars {
		got = append(got, x.Consumer)
		if x.Color != x.Chip || x.Color == "" {
			t.Errorf("%s/%d: %s's lag bar is %s, its chip %q: want the same colour", topic, partition, x.Consumer, x.Color, x.Chip)
		}
		for _, y := range bars[:i] {
			if x.Color == y.Color {
				t.Errorf("%s/%d: %s and %s both drawn in %s", topic, partition, x.Consumer, y.Consumer, x.Color)
			}
			overlapX := min(x.Right, y.Right) - max(x.Left, y.Left)
			overlapY := min(x.Bottom, y.Bottom) - max(x.Top, y.Top)
			if overlapX > 0 && overlapY > 0 {
				t.Errorf("%s/%d: the lag bars of %s (%+v) and %s (%+v) overlap", topic, partition, x.Consumer, x, y.Consumer, y)
			}
		}
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s/%d: lag bars for %q, want %q", topic, partition, got, want)
	}
}

// checkText checks the text expr evaluates to as a person reads it:
// every number of four digits or more has thousands separators, and no
// "1 records".
func checkText(t *testing.T, b *browser, expr string) {
	t.Helper()
	var text string
	b.eval(expr, &text)
	if m := regexp.MustCompile(`(^|[^\d,.:/])\d{4,}`).FindAllString(text, -1); m != nil {
		t.Errorf("numbers without thousands separators: %q in\n%s", m, text)
	}
	if m := regexp.MustCompile(`\b1 (record|partition|topic|consumer|segment)s\b`).FindAllString(text, -1); m != nil {
		t.Errorf("plural after 1: %q in\n%s", m, text)
	}
}

// checkTimeAxis checks the consumer page's lag chart's time axis: from
// its first point to its last, and at least a minute up to its last; with
// no point, the minute up to now; never more than a minute before the
// data's first point or the test's start (began).
func checkTimeAxis(t *testing.T, b *browser, began time.Time) {
	t.Helper()
	var ax struct {
		XMin, XMax, First, Last, Now float64
		Points                       int
	}
	b.eval(`(() => { const d = document.querySelector('.big').dataset;
		return {xMin: +d.xMin, xMax: +d.xMax, first: +(d.first ?? NaN), last: +(d.last ?? NaN), points: +(d.points ?? 0), now: Date.now() / 1000}; })()`, &ax)
	const minute = 60.0
	wantMin, wantMax := ax.Now-minute, ax.Now
	if ax.Points > 0 {
		wantMin, wantMax = min(ax.First, ax.Last-minute), ax.Last
	}
	span := minute
	if ax.Points > 0 {
		span = max(minute, ax.Last-ax.First)
	}
	started := float64(began.UnixMilli()) / 1000
	if ax.XMax-ax.XMin > span+0.001 || ax.XMin < started-minute-1 ||
		(ax.Points > 0 && (abs(ax.XMin-wantMin) > 0.001 || abs(ax.XMax-wantMax) > 0.001)) {
		t.Errorf("lag chart's time axis from %.3f to %.3f (%.0f s) for %d points from %.3f to %.3f (test began at %.3f); want %.3f to %.3f",
			ax.XMin, ax.XMax, ax.XMax-ax.XMin, ax.Points, ax.First, ax.Last, started, wantMin, wantMax)
	}
}

func abs(x float64) float64 { return max(x, -x) }

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

// TestDashboard_Screenshot takes the dashboard's pictures as a user
// sees them: the built passbook binary serving a data directory of a few
// topics and consumers with some lag (`passbook serve --http`), traffic
// through its HTTP API, headless Chromium at 1,400 and 400 px. It runs
// only when asked:
//
//	go test -run TestDashboard_Screenshot ./web/ -args -update-screenshot         # docs/dashboard.png
//	go test -run TestDashboard_Screenshot ./web/ -args -screenshot-dir /tmp/shots # every view, both widths, both themes
func TestDashboard_Screenshot(t *testing.T) {
	if !*updateScreenshot && *screenshotDir == "" {
		t.Skip("takes pictures only when asked: -update-screenshot or -screenshot-dir DIR")
	}
	data := t.TempDir()
	db, err := passbook.Open(data, smallSegments)
	if err != nil {
		t.Fatal(err)
	}
	courseTopic(t, db)
	retainedTopic(t, db)
	wideTopic(t, db)
	compactedTopic(t, db)
	if err := db.Offsets().Commit(context.Background(), offsets.Key{Consumer: "analytics-v2", Topic: "orders", Partition: 0}, 42_000); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(t.TempDir(), "passbook")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/passbook").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	httpAddr, kafkaAddr := freeAddr(t), freeAddr(t)
	srv := exec.Command(bin, "serve", "--data", data, "--kafka", kafkaAddr, "--http", httpAddr)
	var logs strings.Builder
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGTERM) // ours, by pid
		if err := <-exited; err != nil {
			t.Errorf("passbook serve: %v\n%s", err, logs.String())
		}
	})
	url := "http://" + httpAddr
	for ready := false; !ready; {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("passbook serve exited (%v): %s", err, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		if r, err := http.Get(url + "/readyz"); err == nil {
			r.Body.Close()
			ready = r.StatusCode == http.StatusOK
		}
	}

	// Twelve seconds of appends to orders and telemetry, and
	// orders-writer keeping up with orders, so the charts have a history.
	rng := rand.New(rand.NewPCG(1, 2))
	post := func(path string, body any) []byte {
		t.Helper()
		buf, _ := json.Marshal(body)
		r, err := http.Post(url+path, "application/json", bytes.NewReader(buf))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		out, _ := io.ReadAll(r.Body)
		if r.StatusCode >= 300 {
			t.Fatalf("POST %s: %s %s", path, r.Status, out)
		}
		return out
	}
	records := func(n, partition int) map[string]any {
		recs := make([]map[string]any, n)
		for i := range recs {
			recs[i] = map[string]any{"value": fmt.Sprintf("order %d", rng.IntN(1_000_000))}
			if partition >= 0 {
				recs[i]["partition"] = partition
			}
		}
		return map[string]any{"records": recs}
	}
	b := startBrowser(t, 1400, 900)
	b.navigate(url + "/")
	for i, end := 0, time.Now().Add(12*time.Second); time.Now().Before(end); i++ {
		var appended struct{ Offsets []struct{ Offset int64 } }
		json.Unmarshal(post("/api/topics/orders/records", records(150+120*(i%40)/40+rng.IntN(60), 0)), &appended)
		post("/api/topics/telemetry/records", records(40+rng.IntN(40), rng.IntN(200)))
		if i%2 == 0 {
			head := appended.Offsets[len(appended.Offsets)-1].Offset + 1
			post("/api/consumers/orders-writer/topics/orders/commit", map[string]any{"offsets": []map[string]any{{"partition": 0, "offset": head}}})
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.waitFor(`document.querySelector('section.topic[data-topic="orders"] .tape')`, 5*time.Second)
	time.Sleep(time.Second)

	if *updateScreenshot {
		b.screenshot(filepath.Join("..", "docs", "dashboard.png"), 1400, 1400)
	}
	d := *screenshotDir
	if d == "" {
		return
	}
	for _, width := range []int{1400, 400} {
		b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil)
		for _, theme := range []string{"light", "dark"} {
			b.eval(`if (document.documentElement.dataset.theme !== "`+theme+`") document.getElementById("theme").click()`, nil)
			for _, hash := range []string{"#/", "#/consumer/analytics-v2", "#/consumer/fraud-check", "#/topic/telemetry"} {
				b.eval(`location.hash = "`+hash+`"`, nil)
				time.Sleep(time.Second)
				name := strings.NewReplacer("#/", "", "/", "-").Replace(hash)
				if name == "" {
					name = "overview"
				}
				b.screenshot(filepath.Join(d, fmt.Sprintf("%s-%s-%d.png", name, theme, width)), width, 2400)
			}
			b.eval(`location.hash = "#/"`, nil)
			time.Sleep(time.Second)
			b.screenshotElement(`section.topic[data-topic="payments"]`, filepath.Join(d, fmt.Sprintf("payments-%s-%d@2x.png", theme, width)), 2)
		}
	}
}

// freeAddr is a free port on 127.0.0.1, for a server a test starts.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func thousands(n int64) string { return thousandsfmt.Int(n) }

func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func containsString(list []string, s string) bool { return slices.Contains(list, s) }

// layout is what a page's width looks like to a person: whether it
// scrolls sideways, and what sticks out on the right.
type layout struct {
	ScrollWidth, ClientWidth int
	Out                      []string // elements whose right edge is past the window's
	Facts                    []struct {
		Text         string
		Width, Panel float64
	}
}

const readLayout = `(() => {
  const d = document.documentElement, w = d.clientWidth;
  const out = [...document.querySelectorAll("body *")].filter((el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.right > w + 0.5;
  }).slice(0, 8).map((el) => el.tagName.toLowerCase() + "." + el.className + " (right " + Math.round(el.getBoundingClientRect().right) + "): " + el.textContent.trim().slice(0, 60));
  const facts = [...document.querySelectorAll(".topic-facts")].map((f) => ({
    text: f.textContent, width: f.getBoundingClientRect().width, panel: f.closest(".panel").getBoundingClientRect().width }));
  return {scrollWidth: d.scrollWidth, clientWidth: w, out, facts};
})()`

// TestDashboard_Browser_Narrow opens every view at 400 px, as on a
// phone: nothing scrolls sideways, nothing sticks out, and a topic's
// subtitle takes the card's width instead of a word a line.
func TestDashboard_Browser_Narrow(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	const width, height = 400, 800
	b := startBrowser(t, width, height)
	e := newEnvSetup(t, smallSegments, &Options{EventInterval: defaultEventInterval}, func(db *passbook.DB) {
		courseTopic(t, db)
		retainedTopic(t, db)
		wideTopic(t, db)
		compactedTopic(t, db)
	})
	b.navigate(e.url + "/")
	for _, view := range []struct {
		hash, ready string
	}{
		{"#/", `document.querySelector('section.topic[data-topic="telemetry"] .tape') && document.querySelector('.clist a')`},
		{"#/topic/payments", `document.querySelector('section.topic[data-topic="payments"] .clabel')`},
		{"#/topic/telemetry", `document.querySelectorAll('section.topic[data-topic="telemetry"] .tape').length === 40`},
		{"#/consumer/analytics-v2", `document.querySelector('.chead h1')?.textContent.includes("analytics-v2") && document.querySelector('table.parts td.lag')`},
		{"#/consumer/fraud-check", `document.querySelector('.chead h1')?.textContent.includes("fraud-check") && document.querySelectorAll('table.parts td.lag').length === 3`},
		{"#/consumer/sessionizer", `document.querySelector('.chead h1')?.textContent.includes("sessionizer") && document.querySelector('.parts-bar')`},
	} {
		t.Run(view.hash, func(t *testing.T) {
			outer := b.t
			b.t = t // its failures are the subtest's
			defer func() { b.t = outer }()
			b.eval(`location.hash = "`+view.hash+`"`, nil)
			b.waitFor(view.ready, 5*time.Second)
			var l layout
			b.eval(readLayout, &l)
			if l.ScrollWidth > l.ClientWidth || len(l.Out) > 0 {
				t.Errorf("at %d px the page is %d px wide; sticking out: %q", width, l.ScrollWidth, l.Out)
			}
			for _, f := range l.Facts {
				if f.Width < 0.7*f.Panel {
					t.Errorf("subtitle %q is %.0f px wide in a card of %.0f px: want the card's width, not a word a line", f.Text, f.Width, f.Panel)
				}
			}
			checkText(t, b, `document.querySelector(".bar").innerText + "\n" + document.getElementById("main").innerText`)
			if d := *screenshotDir; d != "" {
				name := strings.NewReplacer("#/", "", "/", "-").Replace(view.hash)
				if name == "" {
					name = "overview"
				}
				b.screenshot(filepath.Join(d, "narrow-"+name+".png"), width, 2400)
				b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
			}
		})
	}
}

// TestDashboard_Browser_DeepLink opens links to a consumer's and a
// topic's page while the server has not answered yet (the browser holds
// /api/events back): the page says it is loading — not that there is no
// such consumer or topic — until the first data arrives, then the real
// answer, "no consumer named ghost" only for a ghost. Before the lag
// history arrives the chart's time axis is the last minute, not years.
func TestDashboard_Browser_DeepLink(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	began := time.Now()
	b := startBrowser(t, 1400, 900)
	e := newEnvSetup(t, nil, &Options{EventInterval: defaultEventInterval}, func(db *passbook.DB) {
		// One of each: 1 topic, 1 partition, 1 record, 1 consumer 1 behind.
		invoices, err := db.CreateTopic("invoices", passbook.TopicConfig{})
		if err != nil {
			t.Fatal(err)
		}
		fill(t, invoices, 0, 1)
		if err := db.Offsets().Commit(context.Background(), offsets.Key{Consumer: "billing", Topic: "invoices", Partition: 0}, 0); err != nil {
			t.Fatal(err)
		}
	})
	// The server's history of billing's lag has a few points.
	var hist struct {
		Lag map[string]struct{ T []int64 }
	}
	for {
		e.get("/api/history?consumer=billing").decode(t, &hist)
		if len(hist.Lag["invoices"].T) >= 3 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	paused := b.subscribe("Fetch.requestPaused")
	b.call("Fetch.enable", map[string]any{"patterns": []map[string]any{{"urlPattern": "*/api/events*"}, {"urlPattern": "*/api/history*"}}}, nil)
	// hold waits for the page to ask for path, and returns the request's id.
	hold := func(path string) string {
		t.Helper()
		for {
			select {
			case raw := <-paused:
				var ev struct {
					RequestID string
					Request   struct{ URL string }
				}
				if err := json.Unmarshal(raw, &ev); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(ev.Request.URL, path) {
					return ev.RequestID
				}
				b.try("Fetch.continueRequest", map[string]any{"requestId": ev.RequestID}, nil) // another's, or a dead page's
			case <-time.After(10 * time.Second):
				t.Fatalf("the page did not ask for %s within 10 s", path)
			}
		}
	}
	release := func(id string) { b.call("Fetch.continueRequest", map[string]any{"requestId": id}, nil) }
	mainText := func() string {
		var s string
		b.eval(`document.getElementById("main").innerText`, &s)
		return normalize(s)
	}

	for _, tc := range []struct {
		link, loading, ready, answer string
	}{
		{"#/consumer/billing", "Loading consumer “billing”", `document.querySelector('.chead h1')?.textContent.includes("billing")`,
			"1 record behind 1 partition behind 1 topic"},
		{"#/consumer/ghost", "Loading consumer “ghost”", `document.querySelector('.empty:not(.loading)')`,
			"No consumer named “ghost” has committed an offset."},
		{"#/topic/invoices", "Loading topic “invoices”", `document.querySelector('section.topic[data-topic="invoices"] .tape')`,
			"1 partition · 1 record"},
		{"#/topic/nosuch", "Loading topic “nosuch”", `document.querySelector('.empty:not(.loading)')`,
			"No topic named “nosuch”."},
	} {
		b.navigate("about:blank")
		b.navigate(e.url + "/" + tc.link)
		events := hold("/api/events")
		b.waitFor(`document.querySelector('.loading')`, 5*time.Second)
		if d := *screenshotDir; d != "" {
			b.screenshot(filepath.Join(d, "loading-"+strings.NewReplacer("#/", "", "/", "-").Replace(tc.link)+".png"), 1400, 500)
			b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil)
		}
		if got := mainText(); !strings.Contains(got, tc.loading) || strings.Contains(got, "No ") {
			t.Errorf("%s before the first data shows %q, want %q and nothing about what is missing", tc.link, got, tc.loading)
		}
		release(events)
		b.waitFor(tc.ready, 5*time.Second)
		if got := mainText(); !strings.Contains(got, tc.answer) {
			t.Errorf("%s once connected shows %q, want %q", tc.link, got, tc.answer)
		}
		if tc.link != "#/consumer/billing" {
			continue
		}
		// The history is held back: the axis is the minute up to the
		// newest point the stream brought (or up to now).
		history := hold("/api/history")
		b.waitFor(`document.querySelector('.big[data-x-max]')`, 5*time.Second)
		checkTimeAxis(t, b, began)
		release(history)
		first := float64(hist.Lag["invoices"].T[0]) / 1000
		b.waitFor(fmt.Sprintf(`+document.querySelector('.big').dataset.first === %v`, first), 5*time.Second)
		checkTimeAxis(t, b, began)
		checkText(t, b, `document.querySelector(".bar").innerText + "\n" + document.getElementById("main").innerText`)
		var totals string
		b.eval(`document.getElementById("totals").innerText`, &totals)
		if got, want := normalize(totals), "1 topic 1 partition 1 record 1 consumer"; got != want {
			t.Errorf("totals %q, want %q", got, want)
		}
	}
	b.call("Fetch.disable", nil, nil)

	// The overview of the same: every count in the singular.
	b.navigate("about:blank")
	b.navigate(e.url + "/#/")
	b.waitFor(`document.querySelector('section.topic[data-topic="invoices"] .tape')`, 5*time.Second)
	var facts string
	b.eval(`document.querySelector('section.topic[data-topic="invoices"] .topic-facts').textContent + " | " + document.querySelector('section.topic[data-topic="invoices"] .pmeta').innerText`, &facts)
	if facts = normalize(facts); !strings.HasPrefix(facts, "1 partition · 1 record · ") || !strings.Contains(facts, " · 1 consumer | 1 head ") || !strings.HasSuffix(facts, " · 1 segment") {
		t.Errorf("invoices described as %q, want 1 partition · 1 record · … · 1 consumer | 1 head … · 1 segment", facts)
	}
	checkText(t, b, `document.querySelector(".bar").innerText + "\n" + document.getElementById("main").innerText`)
}
