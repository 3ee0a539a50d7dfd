// Command certs writes throw-away test certificates for the client
// scripts when openssl is not installed: a CA, a server certificate for
// 127.0.0.1, ::1 and localhost, and a client certificate.
//
//	go run ./tests/clients/certs DIR CLIENT-CN
//
// It writes DIR/ca.pem, server.pem, server-key.pem, client.pem and
// client-key.pem (internal/testcerts).
package main

import (
	"fmt"
	"os"

	"github.com/passbook-log/passbook/internal/testcerts"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: certs DIR CLIENT-CN")
		os.Exit(2)
	}
	if err := os.MkdirAll(os.Args[1], 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "certs:", err)
		os.Exit(1)
	}
	if _, err := testcerts.Make(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "certs:", err)
		os.Exit(1)
	}
}
