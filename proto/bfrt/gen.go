// Package bfrt holds BfRuntime's gRPC definitions (bfruntime.proto, the
// BF-SDE's BfRt server API) as published under the Apache License 2.0
// (LICENSE) in p4lang/open-p4studio at commit
// 1f97778f9ad5c8165bfce552fffe27c69887756b, path
// pkgsrc/bf-drivers/src/bf_rt/proto/bfruntime.proto, copied unchanged. The
// generated Go code is in bfrtpb and committed. Regenerate with
// `GOOGLEAPIS=DIR go generate ./proto/bfrt`, DIR holding
// google/rpc/status.proto from github.com/googleapis/googleapis (the
// proto imports it; its Go package is genproto's rpc/status), with protoc
// and the Go plugins of proto/gen.go.
package bfrt

//go:generate sh -c "protoc -I .. -I \"$GOOGLEAPIS\" --go_out=.. --go_opt=module=github.com/netlumina/lumina/proto --go_opt='Mbfrt/bfruntime.proto=github.com/netlumina/lumina/proto/bfrt/bfrtpb;bfrtpb' --go-grpc_out=.. --go-grpc_opt=module=github.com/netlumina/lumina/proto --go-grpc_opt='Mbfrt/bfruntime.proto=github.com/netlumina/lumina/proto/bfrt/bfrtpb;bfrtpb' ../bfrt/bfruntime.proto"
