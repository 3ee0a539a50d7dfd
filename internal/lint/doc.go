// Package lint is the project's lint, written as tests: the direction of
// imports that docs/architecture.md draws (storage ← offsets ← consumer
// ← the root package ← kafka / web ← cmd) is checked on every test run,
// so a back edge fails `go test ./...` with the edge it added.
package lint
