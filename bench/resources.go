package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// What a server costs besides its speed, for the servers the harness
// starts as processes: how long from exec until the first record is
// acknowledged, its resident memory after the trial's workloads, and the
// CPU time it used over the trial, per million records measured.

// serverUsage is one trial's figures for one server.
type serverUsage struct {
	firstProduce time.Duration // exec → first acknowledged produce
	rss          int64         // resident set, bytes, after the workloads
	cpu          time.Duration // user + system CPU since exec, after the workloads
}

// usageReporter is a target whose server process the harness can read.
type usageReporter interface {
	serverUsage() (serverUsage, error)
}

// procUsage reads a process's resident set (VmRSS of /proc/PID/status)
// and its CPU time (utime + stime of /proc/PID/stat, in clock ticks of
// 1/100 s, as on every Linux the harness runs on).
func procUsage(pid int) (rss int64, cpu time.Duration, err error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("/proc/%d/status: VmRSS %q", pid, f[1])
			}
			rss = kb << 10
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis: utime and stime are 14 and 15.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return rss, time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// serverProc is what a kafkaTarget knows of the process behind it.
type serverProc struct {
	p            *proc
	firstProduce time.Duration
}

func (t *kafkaTarget) serverUsage() (serverUsage, error) {
	if t.server == nil {
		return serverUsage{}, errors.New("no server process")
	}
	rss, cpu, err := procUsage(t.server.p.pid())
	if err != nil {
		return serverUsage{}, err
	}
	return serverUsage{firstProduce: t.server.firstProduce, rss: rss, cpu: cpu}, nil
}

// awaitFirstProduce produces one record to a topic of its own, retrying
// until the server acknowledges it (or timeout), and returns the time
// since began: the server's time from exec to its first acknowledged
// record, startup and topic creation included.
func (t *kafkaTarget) awaitFirstProduce(ctx context.Context, p *proc, began time.Time, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		if p.exited() {
			return 0, fmt.Errorf("%s exited: %v: %s", p.name, p.err, p.logTail(5))
		}
		if err := dialable(t.addr)(ctx); err != nil {
			last = err
			time.Sleep(20 * time.Millisecond)
			continue
		}
		cl, err := t.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(timeout))
		if err != nil {
			return 0, err
		}
		err = t.createTopic(ctx, cl, "first-produce")
		if err == nil {
			err = cl.ProduceSync(ctx, &kgo.Record{Topic: "first-produce", Value: []byte("x")}).FirstErr()
		}
		cl.Close()
		if err == nil {
			return time.Since(began), nil
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("no produce acknowledged within %v: %w", timeout, last)
}

// started finishes a start: it waits for the first acknowledged produce,
// which it times from began (just before exec), and stops the server if
// none comes.
func (t *kafkaTarget) started(ctx context.Context, p *proc, began time.Time) error {
	first, err := t.awaitFirstProduce(ctx, p, began, 2*time.Minute)
	if err != nil {
		t.stopServer()
		return err
	}
	t.server = &serverProc{p: p, firstProduce: first}
	return nil
}
