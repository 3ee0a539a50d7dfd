package consumer

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// defaultHolder names this process in a lease: host:pid.
func defaultHolder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// holderGone reports whether a lease holder named host:pid is a process on
// this host that no longer exists: a consumer that crashed, whose lease
// its successor may take over without waiting for it to expire.
func holderGone(holder string) bool {
	host, pidText, ok := strings.Cut(holder, ":")
	if !ok {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	if me, _ := os.Hostname(); me != host {
		return false
	}
	return processGone(pid)
}
