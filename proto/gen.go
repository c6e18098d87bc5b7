// Package proto holds lumina's protobuf definitions; the generated Go code
// is in luminav1 and committed. Regenerate with `go generate ./proto`
// (needs protoc from Debian's protobuf-compiler and the Go plugins:
// go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
// google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1).
package proto

//go:generate protoc --go_out=. --go_opt=module=github.com/netlumina/lumina/proto --go-grpc_out=. --go-grpc_opt=module=github.com/netlumina/lumina/proto lumina/v1/lumina.proto
