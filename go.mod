module github.com/dshtrace/dshtrace

go 1.26

require (
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/valyala/fastjson v1.6.10 // indirect
	go.uber.org/goleak v1.3.0 // indirect
)
