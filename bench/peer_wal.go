package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tidwall/wal"
)

// walSystem is github.com/tidwall/wal, linked in: one log per workload
// in the trial's directory.
func walSystem() *system {
	return &system{
		key:     "wal",
		name:    "tidwall/wal",
		version: moduleVersion("github.com/tidwall/wal"),
		durability: func(w workload) string {
			switch w {
			case wDurable:
				return "NoSync=false: WriteBatch fsyncs before it returns"
			case wReplay:
				return "Read(i) for i = 1…N (a copy per entry)"
			}
			return "NoSync=true: in the OS when Write returns"
		},
		skip: func(w workload) string {
			switch w {
			case wCommit:
				return "a log library: it has no consumers or committed offsets"
			case wLatency:
				return "a log library: no way to tail it but polling"
			}
			return ""
		},
		start: func(ctx context.Context, dir string) (target, error) {
			return &walTarget{dir: dir}, nil
		},
	}
}

type walTarget struct{ dir string }

func (t *walTarget) close() error { return nil }

func (t *walTarget) open(name string, noSync bool) (*wal.Log, error) {
	return wal.Open(filepath.Join(t.dir, name), &wal.Options{NoSync: noSync})
}

func (t *walTarget) appendRun(ctx context.Context, name string, p params, k int, noSync bool) (measure, error) {
	l, err := t.open(name, noSync)
	if err != nil {
		return measure{}, err
	}
	defer l.Close()
	pool := values(valuePool, p.size)
	var b wal.Batch
	idx := uint64(1)
	return deadlineCount(ctx, p.n, k, p.maxTime, func(i, k int) error {
		j := i % (valuePool - k + 1)
		if k == 1 {
			err := l.Write(idx, pool[j])
			idx++
			return err
		}
		b.Clear()
		for _, v := range pool[j : j+k] {
			b.Write(idx, v)
			idx++
		}
		return l.WriteBatch(&b)
	})
}

func (t *walTarget) run(ctx context.Context, w workload, p params) (measure, error) {
	switch w {
	case wSingle:
		return t.appendRun(ctx, "single", p, 1, true)
	case wBatch:
		return t.appendRun(ctx, "batch", p, p.batch, true)
	case wKiB:
		return t.appendRun(ctx, "kib", p, p.batch, true)
	case wDurable:
		return t.appendRun(ctx, "fsync", p, p.batch, false)
	case wReplay:
		dir := filepath.Join(t.dir, "replay")
		if err := os.RemoveAll(dir); err != nil {
			return measure{}, err
		}
		if err := walFillN(dir, p.n, p.size); err != nil {
			return measure{}, err
		}
		l, err := wal.Open(dir, nil)
		if err != nil {
			return measure{}, err
		}
		defer l.Close()
		start := time.Now()
		got := 0
		for i := range p.n {
			v, err := l.Read(uint64(i + 1))
			if err != nil {
				return measure{}, err
			}
			if len(v) != p.size {
				return measure{}, fmt.Errorf("entry %d has %d bytes", i+1, len(v))
			}
			got++
			if got%10_000 == 0 && time.Since(start) > p.maxTime {
				break
			}
		}
		return measure{records: got, elapsed: time.Since(start)}, nil
	}
	return measure{}, na("not implemented")
}

// walFillN writes n entries of size bytes in batches of 1,000.
func walFillN(dir string, n, size int) error {
	l, err := wal.Open(dir, &wal.Options{NoSync: true})
	if err != nil {
		return err
	}
	pool := values(valuePool, size)
	var b wal.Batch
	for i := range n {
		b.Write(uint64(i+1), pool[i%valuePool])
		if (i+1)%1000 == 0 || i+1 == n {
			if err := l.WriteBatch(&b); err != nil {
				l.Close()
				return err
			}
		}
	}
	return l.Close()
}
