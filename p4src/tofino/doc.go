// Package tofino packs bf-p4c's output for lumina.p4 into the P4Runtime
// device config (ForwardingPipelineConfig.p4_device_config) a Tofino
// switch's P4Runtime server expects. The P4Info travels next to it in
// ForwardingPipelineConfig.p4info and is not part of either format.
//
// Two servers, two formats (docs/tofino.md walks through both):
//
// BF-SDE P4Runtime server (bf_switchd with the PI "tofino" target, and
// Stratum-bf's legacy format) — PackBFRuntime. Little-endian length
// prefixes, one pipeline profile only:
//
//	u32 len(program name) | program name
//	u32 len(tofino.bin)   | tofino.bin
//	u32 len(context.json) | context.json
//
// (Verified against Stratum's BfPipelineConfigToPiConfig, which converts
// the protobuf format below into this one with Uint32ToLeByteStream.)
//
// Stratum (stratum_bfrt, stratum_bf) — PackStratum. A serialized
// stratum.hal.barefoot.BfPipelineConfig (stratum/hal/lib/barefoot/bf.proto),
// written by hand with protowire because the .proto is not vendored here:
//
//	message BfPipelineConfig {
//	  string p4_name = 1;
//	  bytes bfruntime_info = 2;          // bf-rt.json
//	  repeated Profile profiles = 3;
//	  message Profile {
//	    string profile_name = 1;         // "pipe"
//	    bytes context = 2;               // context.json
//	    bytes binary = 3;                // tofino.bin
//	    repeated uint32 pipe_scope = 4;  // packed (proto3)
//	  }
//	}
//
// The field numbers were read from Stratum's bf.proto; the encoding is
// checked here against hand-computed bytes, not against Stratum itself
// (no Stratum build is available to this package's tests).
//
// The software switch (injector) stores p4_device_config opaquely and
// returns it from GetForwardingPipelineConfig, so the same
// SetForwardingPipelineConfig request works against it and a Tofino.
//
// Load reads bf-p4c's <program>.conf (the same file bf_switchd's
// --conf-file and Stratum's bf_pipeline_builder take) and the files it
// names.
package tofino
