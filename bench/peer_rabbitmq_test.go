package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/logs"
)

// TestRabbitClientLog_SwapWhileLogging: the RabbitMQ client logs from its
// own goroutines while one target closes (its client.log goes) and the
// next starts (a new client.log). Under -race this failed when each
// target called logs.SetLogger; now each line goes to the file of the
// moment, and none after its target closed.
func TestRabbitClientLog_SwapWhileLogging(t *testing.T) {
	var first, second bytes.Buffer
	setClientLog(&first)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				logs.LogError("closing connection %d", 1)
			}
		}
	})
	for range 100 {
		setClientLog(nil) // the first target closes
		setClientLog(&second)
		setClientLog(nil)
		setClientLog(&first)
	}
	setClientLog(&second)
	logs.LogError("after the swap")
	setClientLog(nil)
	close(stop)
	wg.Wait()
	logs.LogError("nowhere")
	for name, b := range map[string]*bytes.Buffer{"first": &first, "second": &second} {
		for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
			if line == "" {
				continue // nothing was logged while it was the file
			}
			if !strings.Contains(line, " error closing connection 1") && !strings.HasSuffix(line, " error after the swap") {
				t.Errorf("%s client.log has %q", name, line)
			}
		}
	}
	if !strings.Contains(second.String(), "after the swap") || strings.Contains(first.String()+second.String(), "nowhere") {
		t.Errorf("lines went to the wrong file:\nfirst %d bytes, second:\n%s", first.Len(), second.String())
	}
}
