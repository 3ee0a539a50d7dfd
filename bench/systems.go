package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// systems lists passbook's two sides and every selected peer, in the
// order the tables show them. Peers that cannot run here are kept, with
// the reason, so that the report says why they are missing.
func (h *harness) systems(ctx context.Context, tmp string) ([]*system, error) {
	bin, buildErr := passbookBinary(ctx, h.passbookBin, tmp)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pk := passbookKafka(ctx, bin, buildErr)
	pe := passbookEmbedded()
	head := gitHead()
	if h.source != "" {
		head = h.source
	}
	pe.version = "this repository" + ifSet(" at ", head) + " (" + runtime.Version() + ")"
	pk.version = "passbook serve" + ifSet(" at ", head) + ", franz-go " + moduleVersion("github.com/twmb/franz-go")
	out := []*system{pe, pk}
	if h.baselineBin != "" {
		// The old path, for the replay's CPU per MB fetched only.
		bl := passbookKafka(ctx, h.baselineBin, statErr(h.baselineBin))
		bl.name, bl.variant = pbBaseline, true
		bl.version = "passbook serve " + h.baselineBin + " (--baseline-passbook)"
		bl.skip = onlyFor(wReplay, "the baseline binary runs only the replay (its server CPU per MB fetched)")
		out = append(out, bl)
	}
	add := func(key string, ss ...*system) {
		if h.peers[key] {
			out = append(out, ss...)
		}
	}
	add("wal", walSystem())
	add("kfake", kfakeSystem(false), kfakeSystem(true))
	if h.peers["kafka"] {
		add("kafka", apacheKafka(ctx)...)
	}
	add("nats", natsSystem(h.natsServer, false), natsSystem(h.natsSync, true))
	add("redis", redisSystem(false), redisSystem(true))
	add("rabbitmq", rabbitSystem())
	out = append(out, pythonLab(h.pythonLab))
	for _, s := range out {
		if s.key == "kfake" {
			s.version = "franz-go kfake " + moduleVersion("github.com/twmb/franz-go/pkg/kfake")
		}
	}
	if buildErr != nil {
		fmt.Fprintf(h.stderr, "passbook serve will be skipped: %v\n", buildErr)
	}
	return out, nil
}

func statErr(file string) error {
	_, err := os.Stat(file)
	return err
}

// gitHead is the repository's commit, marked "+changes" when the work
// tree differs from it, or "" outside a git checkout.
func gitHead() string {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/passbook-log/passbook").Output()
	if err != nil {
		return ""
	}
	dir := strings.TrimSpace(string(root))
	head, err := exec.Command("git", "-C", dir, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	s := "commit " + strings.TrimSpace(string(head))
	if out, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench", ":!docs").Output(); err == nil && len(out) > 0 {
		s += " with uncommitted changes"
	}
	return s
}
