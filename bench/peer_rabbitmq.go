package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/logs"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/message"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"
)

// The Debian package's scripts: rabbitmq-server runs the broker in the
// foreground; /usr/sbin/rabbitmq-server would switch to the rabbitmq
// user and its /var/lib/rabbitmq, which the harness does not want.
const rabbitLib = "/usr/lib/rabbitmq/bin"

// rabbitSystem is RabbitMQ with the stream plugin, started by the
// harness as the current user with every directory, port and the Erlang
// port mapper (epmd) of its own, driven with rabbitmq-stream-go-client.
func rabbitSystem() *system {
	s := &system{
		key:     "rabbitmq",
		name:    "RabbitMQ Streams",
		version: "rabbitmq-server " + debVersion("rabbitmq-server") + ", rabbitmq-stream-go-client " + moduleVersion("github.com/rabbitmq/rabbitmq-stream-go-client"),
		durability: func(w workload) string {
			switch w {
			case wSingle:
				return "BatchSend of one message, wait for its confirm: written to the stream's segment in the OS, no fsync"
			case wReplay:
				return "consumer from the first offset"
			case wCommit:
				return "commit = StoreOffset of each message: a one-way frame, the server sends no reply"
			case wLatency:
				return "BatchSend each millisecond; consumer from the next offset"
			}
			return "BatchSend of a batch, wait for every confirm: written to the stream's segment in the OS, no fsync"
		},
		skip: func(w workload) string {
			if w == wDurable {
				return "streams confirm after writing to the OS (and to replicas); there is no setting to fsync before the confirm"
			}
			return ""
		},
		start: startRabbit,
	}
	for _, bin := range []string{filepath.Join(rabbitLib, "rabbitmq-server"), "epmd"} {
		if _, err := exec.LookPath(bin); err != nil {
			s.unavailable = fmt.Sprintf("%s not found: rabbitmq-server is not installed (Debian: apt-get install rabbitmq-server)", bin)
		}
	}
	return s
}

// debVersion is an installed Debian package's version, or "".
func debVersion(pkg string) string {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", pkg).Output()
	if err != nil {
		return "(unknown version)"
	}
	return strings.TrimSpace(string(out))
}

type rabbitTarget struct {
	epmd, server *proc
	env          *stream.Environment
	filled       map[string]int
	clientLog    *os.File
}

// The client's log lines (it logs, at error level, the connections it
// closes itself) go to a file beside the server's: the running target's
// client.log, or nowhere between targets. The client reads its logger, a
// global of its logs package, from its own goroutines, and those may
// outlive a closed environment: so logs.SetLogger is called once, before
// the first environment, and only the file behind it changes, under mu.
var clientLog struct {
	once sync.Once
	mu   sync.Mutex
	w    io.Writer // nil: nowhere
}

// setClientLog sends the client's log lines to w (nil: nowhere).
func setClientLog(w io.Writer) {
	clientLog.once.Do(func() { logs.SetLogger(fileLogger{}) })
	clientLog.mu.Lock()
	clientLog.w = w
	clientLog.mu.Unlock()
}

// fileLogger writes the client's log lines to clientLog.w.
type fileLogger struct{}

func (fileLogger) line(level, msg string, v ...any) {
	clientLog.mu.Lock()
	defer clientLog.mu.Unlock()
	if clientLog.w != nil {
		fmt.Fprintf(clientLog.w, "%s %s %s\n", time.Now().Format(time.RFC3339Nano), level, fmt.Sprintf(msg, v...))
	}
}
func (l fileLogger) Info(msg string, v ...any)  { l.line("info", msg, v...) }
func (l fileLogger) Error(msg string, v ...any) { l.line("error", msg, v...) }
func (l fileLogger) Debug(msg string, v ...any) {}
func (l fileLogger) Warn(msg string, v ...any)  { l.line("warn", msg, v...) }

func startRabbit(ctx context.Context, dir string) (target, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	epmdPort, amqpPort, distPort, streamPort := ports[0], ports[1], ports[2], ports[3]
	for _, d := range []string{"mnesia", "log", "home", "plugins-expand"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	conf := fmt.Sprintf("listeners.tcp.default = 127.0.0.1:%d\nstream.listeners.tcp.1 = 127.0.0.1:%d\nstream.advertised_host = 127.0.0.1\nstream.advertised_port = %d\nloopback_users = none\n",
		amqpPort, streamPort, streamPort)
	files := map[string]string{"rabbitmq.conf": conf, "enabled_plugins": "[rabbitmq_stream].\n"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	epmd, err := startProc("epmd", filepath.Join(dir, "epmd.log"), nil, "epmd", "-port", strconv.Itoa(epmdPort), "-relaxed_command_check")
	if err != nil {
		return nil, err
	}
	if err := epmd.waitReady(ctx, 10*time.Second, dialable(fmt.Sprintf("127.0.0.1:%d", epmdPort))); err != nil {
		epmd.stop(time.Second)
		return nil, err
	}
	env := []string{
		"HOME=" + filepath.Join(dir, "home"), // the Erlang cookie goes here
		"ERL_EPMD_PORT=" + strconv.Itoa(epmdPort),
		"RABBITMQ_NODENAME=" + fmt.Sprintf("bench%d@localhost", os.Getpid()),
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT=" + strconv.Itoa(amqpPort),
		"RABBITMQ_DIST_PORT=" + strconv.Itoa(distPort),
		"RABBITMQ_MNESIA_BASE=" + filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE=" + filepath.Join(dir, "log"),
		"RABBITMQ_LOGS=-",
		"RABBITMQ_PID_FILE=" + filepath.Join(dir, "rabbitmq.pid"),
		"RABBITMQ_CONFIG_FILE=" + filepath.Join(dir, "rabbitmq.conf"),
		"RABBITMQ_ADVANCED_CONFIG_FILE=" + filepath.Join(dir, "advanced.config"),
		"RABBITMQ_CONF_ENV_FILE=" + filepath.Join(dir, "rabbitmq-env.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_PLUGINS_EXPAND_DIR=" + filepath.Join(dir, "plugins-expand"),
	}
	server, err := startProc("rabbitmq-server", filepath.Join(dir, "rabbitmq.log"), env, filepath.Join(rabbitLib, "rabbitmq-server"))
	if err != nil {
		epmd.stop(time.Second)
		return nil, err
	}
	t := &rabbitTarget{epmd: epmd, server: server, filled: map[string]int{}}
	if t.clientLog, err = os.Create(filepath.Join(dir, "client.log")); err == nil {
		setClientLog(t.clientLog)
	}
	err = server.waitReady(ctx, 90*time.Second, func(context.Context) error {
		if err := dialable(fmt.Sprintf("127.0.0.1:%d", streamPort))(ctx); err != nil {
			return err
		}
		// Socket buffers 0: the kernel's autotuning, as every other
		// client here has. The client's default, 8 KiB, stalls the
		// delivery of large chunks on TCP zero-window probes (~200 ms).
		e, err := stream.NewEnvironment(stream.NewEnvironmentOptions().SetHost("127.0.0.1").SetPort(streamPort).
			SetUser("guest").SetPassword("guest").SetRPCTimeout(30 * time.Second).SetReadBuffer(0).SetWriteBuffer(0))
		if err != nil {
			return err
		}
		t.env = e
		return nil
	})
	if err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

func (t *rabbitTarget) close() error {
	if t.env != nil {
		t.env.Close()
	}
	t.server.stop(60 * time.Second)
	t.epmd.stop(5 * time.Second)
	if t.clientLog != nil {
		setClientLog(nil) // before the file closes: the client may still log
		t.clientLog.Close()
	}
	return nil
}

// rabbitProducer counts its producer's confirmations.
type rabbitProducer struct {
	p         *stream.Producer
	confirmed chan int
	failed    atomic.Pointer[error]
}

func (t *rabbitTarget) producer(name string) (*rabbitProducer, error) {
	p, err := t.env.NewProducer(name, stream.NewProducerOptions())
	if err != nil {
		return nil, err
	}
	rp := &rabbitProducer{p: p, confirmed: make(chan int, 1<<16)}
	ch := p.NotifyPublishConfirmation()
	go func() {
		for batch := range ch {
			for _, c := range batch {
				if !c.IsConfirmed() {
					err := c.GetError()
					if err == nil {
						err = errors.New("message not confirmed")
					}
					rp.failed.CompareAndSwap(nil, &err)
				}
			}
			rp.confirmed <- len(batch)
		}
	}()
	return rp, nil
}

// send sends vals in one frame and waits for every confirmation.
func (rp *rabbitProducer) send(ctx context.Context, vals [][]byte, wait bool) error {
	msgs := make([]message.StreamMessage, len(vals))
	for i, v := range vals {
		msgs[i] = amqp.NewMessage(v)
	}
	if err := rp.p.BatchSend(msgs); err != nil {
		return err
	}
	if !wait {
		for {
			select {
			case <-rp.confirmed:
				continue
			default:
			}
			break
		}
	}
	for left := len(vals); wait && left > 0; {
		select {
		case n := <-rp.confirmed:
			left -= n
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Minute):
			return errors.New("no confirmation in a minute")
		}
	}
	if e := rp.failed.Load(); e != nil {
		return *e
	}
	return nil
}

func (t *rabbitTarget) declare(name string) error {
	return t.env.DeclareStream(name, &stream.StreamOptions{})
}

func (t *rabbitTarget) appendRun(ctx context.Context, name string, p params, k int) (measure, error) {
	if err := t.declare(name); err != nil {
		return measure{}, err
	}
	rp, err := t.producer(name)
	if err != nil {
		return measure{}, err
	}
	defer rp.p.Close()
	pool := values(valuePool, p.size)
	return deadlineCount(ctx, p.n, k, p.maxTime, func(i, k int) error {
		j := i % (valuePool - k + 1)
		return rp.send(ctx, pool[j:j+k], true)
	})
}

func (t *rabbitTarget) fill(ctx context.Context, name string, n, size int) error {
	if t.filled[name] >= n {
		return nil
	}
	if err := t.declare(name); err != nil {
		return err
	}
	rp, err := t.producer(name)
	if err != nil {
		return err
	}
	defer rp.p.Close()
	pool := values(valuePool, size)
	for done := 0; done < n; done += 1000 {
		if err := rp.send(ctx, pool[:min(1000, n-done)], true); err != nil {
			return err
		}
	}
	t.filled[name] = n
	return nil
}

// consume runs a consumer on stream from offset until it has seen n
// messages or maxTime has passed (checked every 100 messages).
func (t *rabbitTarget) consume(ctx context.Context, name string, n, size int, maxTime time.Duration, opts *stream.ConsumerOptions, each func(stream.ConsumerContext) error) (measure, error) {
	var got atomic.Int64
	var failed atomic.Pointer[error]
	done := make(chan struct{})
	var closed atomic.Bool
	start := time.Now()
	fail := func(err error) {
		failed.CompareAndSwap(nil, &err)
		if closed.CompareAndSwap(false, true) {
			close(done)
		}
	}
	c, err := t.env.NewConsumer(name, func(cc stream.ConsumerContext, m *amqp.Message) {
		if closed.Load() {
			return
		}
		if len(m.GetData()) != size {
			fail(fmt.Errorf("message of %d bytes", len(m.GetData())))
			return
		}
		if each != nil {
			if err := each(cc); err != nil {
				fail(err)
				return
			}
		}
		k := got.Add(1)
		if int(k) >= n || k%100 == 0 && time.Since(start) > maxTime {
			if closed.CompareAndSwap(false, true) {
				close(done)
			}
		}
	}, opts)
	if err != nil {
		return measure{}, err
	}
	defer c.Close()
	select {
	case <-done:
	case <-ctx.Done():
		return measure{}, ctx.Err()
	case <-time.After(maxTime + time.Minute):
		return measure{}, fmt.Errorf("consumed %d of %d", got.Load(), n)
	}
	el := time.Since(start)
	if e := failed.Load(); e != nil {
		return measure{}, *e
	}
	return measure{records: int(got.Load()), elapsed: el}, nil
}

func (t *rabbitTarget) run(ctx context.Context, w workload, p params) (measure, error) {
	switch w {
	case wSingle:
		return t.appendRun(ctx, "single", p, 1)
	case wBatch:
		return t.appendRun(ctx, "batch", p, p.batch)
	case wKiB:
		return t.appendRun(ctx, "kib", p, p.batch)
	case wReplay:
		if err := t.fill(ctx, "replay", p.n, p.size); err != nil {
			return measure{}, err
		}
		return t.consume(ctx, "replay", p.n, p.size, p.maxTime, stream.NewConsumerOptions().SetOffset(stream.OffsetSpecification{}.First()), nil)
	case wCommit:
		if err := t.fill(ctx, "replay", p.n, p.size); err != nil {
			return measure{}, err
		}
		opts := stream.NewConsumerOptions().SetOffset(stream.OffsetSpecification{}.First()).SetConsumerName("bench").SetManualCommit()
		return t.consume(ctx, "replay", p.n, p.size, p.maxTime, opts, func(cc stream.ConsumerContext) error {
			return cc.Consumer.StoreOffset()
		})
	case wLatency:
		if err := t.declare("latency"); err != nil {
			return measure{}, err
		}
		lp := newLatencyProbe(p)
		c, err := t.env.NewConsumer("latency", func(_ stream.ConsumerContext, m *amqp.Message) { lp.observe(m.GetData()) },
			stream.NewConsumerOptions().SetOffset(stream.OffsetSpecification{}.First()))
		if err != nil {
			return measure{}, err
		}
		defer c.Close()
		rp, err := t.producer("latency")
		if err != nil {
			return measure{}, err
		}
		defer rp.p.Close()
		time.Sleep(200 * time.Millisecond)
		return lp.run(ctx, p, func(vals [][]byte) error { return rp.send(ctx, vals, false) })
	}
	return measure{}, na("not implemented")
}
