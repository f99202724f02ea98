module github.com/dshtrace/dshtrace/bench/codec

go 1.26.0

require (
	github.com/dshtrace/dshtrace v0.0.0
	github.com/minio/simdjson-go v0.4.5
	github.com/valyala/fastjson v1.6.10
)

require (
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/klauspost/cpuid/v2 v2.2.3 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/dshtrace/dshtrace => ../..
