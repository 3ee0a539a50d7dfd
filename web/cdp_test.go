package web

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// browser is headless Chromium driven over the Chrome DevTools Protocol:
// one page, attached as a flat session on the browser's websocket.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	profile string // the --user-data-dir: it names our processes in /proc
	ws      *websocket.Conn
	session string

	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpReply
	events  map[string]chan json.RawMessage // method → its events' params, for subscribe
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// chromiumPath finds a Chromium or Chrome binary, or "".
func chromiumPath() string {
	if p := os.Getenv("PASSBOOK_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// startBrowser starts headless Chromium with a fresh profile and opens a
// page of width × height. The test is skipped when Chromium is not
// installed. flags are more of its command-line flags. Cleanup kills
// every process of it and checks none is left.
func startBrowser(t *testing.T, width, height int, flags ...string) *browser {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("skipping the browser test: Chromium is not installed (Debian: apt-get install -y chromium; or set PASSBOOK_CHROMIUM)")
	}
	profile := t.TempDir()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--user-data-dir=" + profile, "--remote-debugging-port=0", "--remote-allow-origins=http://127.0.0.1",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
		"--force-color-profile=srgb", "--font-render-hinting=none",
		fmt.Sprintf("--window-size=%d,%d", width, height)}, flags...)
	cmd := exec.Command(path, append(args, "about:blank")...)
	// Its own process group, so that cleanup reaches the renderers too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	b := &browser{t: t, cmd: cmd, profile: profile, pending: map[int]chan cdpReply{}, events: map[string]chan json.RawMessage{}}
	t.Cleanup(b.stop)

	found := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`DevTools listening on (ws://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var wsURL string
	select {
	case wsURL = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("Chromium did not print its DevTools address within 30 s")
	}
	if b.ws, err = websocket.Dial(wsURL, "", "http://127.0.0.1"); err != nil {
		t.Fatalf("connect to DevTools: %v", err)
	}
	b.ws.MaxPayloadBytes = 64 << 20
	go b.read()

	var target struct{ TargetID string }
	b.call("Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	b.call("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	b.call("Page.enable", nil, nil)
	b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	return b
}

// read dispatches replies to their callers, and events to their
// subscribers; other events are ignored.
func (b *browser) read() {
	for {
		var msg struct {
			ID     int             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			cdpReply
		}
		if err := websocket.JSON.Receive(b.ws, &msg); err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		b.mu.Lock()
		if msg.ID == 0 && msg.Method != "" {
			if ch := b.events[msg.Method]; ch != nil {
				select {
				case ch <- msg.Params:
				default:
					b.t.Errorf("%s: more than %d events not yet read; dropped one", msg.Method, cap(ch))
				}
			}
			b.mu.Unlock()
			continue
		}
		ch := b.pending[msg.ID]
		delete(b.pending, msg.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- msg.cdpReply
		}
	}
}

// subscribe returns the params of the page's events named method, from
// now on, in order. Read them: past 1,024 unread, the test fails.
func (b *browser) subscribe(method string) <-chan json.RawMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := make(chan json.RawMessage, 1024)
	b.events[method] = ch
	return ch
}

// call sends a command to the page (or the browser, before attaching)
// and decodes its result into out.
func (b *browser) call(method string, params any, out any) {
	b.t.Helper()
	if err := b.try(method, params, out); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browser) try(method string, params any, out any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpReply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if b.session != "" && !strings.HasPrefix(method, "Target.") && !strings.HasPrefix(method, "Browser.") {
		msg["sessionId"] = b.session
	}
	if err := websocket.JSON.Send(b.ws, msg); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: the browser connection closed", method)
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s: no answer within 30 s", method)
	}
}

// navigate opens url and waits for the load event's aftermath (a
// document that is complete).
func (b *browser) navigate(url string) {
	b.t.Helper()
	b.call("Page.navigate", map[string]any{"url": url}, nil)
	b.waitFor(`document.readyState === "complete"`, 10*time.Second)
}

// eval evaluates a JavaScript expression in the page and decodes its value.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r)
	if r.ExceptionDetails != nil {
		b.t.Fatalf("%s: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out != nil && len(r.Result.Value) > 0 {
		if err := json.Unmarshal(r.Result.Value, out); err != nil {
			b.t.Fatalf("%s: decode %s: %v", expr, r.Result.Value, err)
		}
	}
}

// waitFor polls a JavaScript condition every 20 ms until it is true, and
// returns how long that took; it fails the test after timeout.
func (b *browser) waitFor(cond string, timeout time.Duration) time.Duration {
	b.t.Helper()
	began := time.Now()
	for {
		var ok bool
		b.eval("!!("+cond+")", &ok)
		if ok {
			return time.Since(began)
		}
		if time.Since(began) > timeout {
			b.t.Fatalf("not true within %v: %s", timeout, cond)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// screenshot saves a PNG of the whole page (up to maxHeight) to path.
func (b *browser) screenshot(path string, width, maxHeight int) {
	b.t.Helper()
	var h float64
	b.eval(`Math.ceil(document.documentElement.scrollHeight)`, &h)
	height := min(int(h), maxHeight)
	b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	time.Sleep(300 * time.Millisecond) // a resize re-renders the tapes
	var shot struct{ Data string }
	b.call("Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("saved %s (%d×%d, %d KB)", path, width, height, len(png)>>10)
}

// stop closes the browser, kills its process group, and fails the test
// if any process started with our profile is still alive.
func (b *browser) stop() {
	if b.ws != nil {
		b.try("Browser.close", nil, nil)
		b.ws.Close()
	}
	exited := make(chan error, 1)
	go func() { exited <- b.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(3 * time.Second):
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL) // helpers that outlived the browser
	var left []int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left = processesWith(b.profile)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if len(left) > 0 {
		b.t.Errorf("browser processes left behind: %v", left)
	}
}

// processesWith lists the live processes whose command line holds s.
func processesWith(s string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), s) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
				continue // a zombie: dead, waiting for its parent
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// screenshotElement saves a PNG of the element selector matches, at
// scale × its CSS pixels, to path: a close look at a detail.
func (b *browser) screenshotElement(selector, path string, scale float64) {
	b.t.Helper()
	var r struct{ X, Y, Width, Height float64 }
	b.eval(`(() => { const el = document.querySelector('`+selector+`'); el.scrollIntoView(); const r = el.getBoundingClientRect();
		return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; })()`, &r)
	var shot struct{ Data string }
	b.call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": r.X, "y": r.Y, "width": r.Width, "height": r.Height, "scale": scale}}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("saved %s (%s, %d KB)", path, selector, len(png)>>10)
}
