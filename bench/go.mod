module github.com/passbook-log/passbook/bench

go 1.26.0

replace github.com/passbook-log/passbook => ../

require (
	github.com/passbook-log/passbook v0.0.0
	github.com/tidwall/wal v1.2.1
)

require (
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/tidwall/gjson v1.10.2 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
	github.com/tidwall/tinylru v1.1.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
