//go:build !unix

package consumer

func processGone(int) bool { return false }
