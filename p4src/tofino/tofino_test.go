package tofino

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var tiny = &Pipeline{Name: "l", BFRuntime: []byte("{}"),
	Profiles: []Profile{{Name: "p", Context: []byte("c"), Binary: []byte("b"), PipeScope: []uint32{0, 2}}}}

func TestPackBFRuntime(t *testing.T) {
	got, err := PackBFRuntime(tiny)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{1, 0, 0, 0, 'l', 1, 0, 0, 0, 'b', 1, 0, 0, 0, 'c'}
	if !bytes.Equal(got, want) {
		t.Errorf("PackBFRuntime = % x, want % x", got, want)
	}
	back, err := UnpackBFRuntime(got)
	if err != nil || back.Name != "l" || string(back.Profiles[0].Binary) != "b" || string(back.Profiles[0].Context) != "c" {
		t.Errorf("UnpackBFRuntime = %+v, %v", back, err)
	}
	two := &Pipeline{Name: "x", Profiles: []Profile{{}, {}}}
	if _, err := PackBFRuntime(two); !errors.Is(err, ErrProfile) {
		t.Errorf("two profiles: %v, want ErrProfile", err)
	}
	for _, bad := range [][]byte{nil, {1, 0, 0}, {5, 0, 0, 0, 'a'}, append(append([]byte{}, want...), 0)} {
		if _, err := UnpackBFRuntime(bad); !errors.Is(err, ErrFormat) {
			t.Errorf("UnpackBFRuntime(% x) = %v, want ErrFormat", bad, err)
		}
	}
}

func TestPackStratum(t *testing.T) {
	got, err := PackStratum(tiny)
	if err != nil {
		t.Fatal(err)
	}
	// Hand-encoded BfPipelineConfig: p4_name (1) "l", bfruntime_info (2)
	// "{}", profiles (3) { profile_name (1) "p", context (2) "c", binary
	// (3) "b", pipe_scope (4) packed [0, 2] }.
	want, _ := hex.DecodeString("0a016c" + "12027b7d" + "1a0d" + "0a0170" + "120163" + "1a0162" + "22020002")
	if !bytes.Equal(got, want) {
		t.Errorf("PackStratum = %x, want %x", got, want)
	}
	back, err := UnpackStratum(got)
	if err != nil || !reflect.DeepEqual(back, tiny) {
		t.Errorf("UnpackStratum = %+v, %v, want %+v", back, err, tiny)
	}
	// Unpacked pipe_scope and unknown fields are accepted.
	alt, _ := hex.DecodeString("0a016c" + "1a09" + "0a0170" + "2000" + "2002" + "2807")
	back, err = UnpackStratum(alt)
	if err != nil || !reflect.DeepEqual(back.Profiles[0].PipeScope, []uint32{0, 2}) {
		t.Errorf("UnpackStratum(unpacked) = %+v, %v", back, err)
	}
	if _, err := UnpackStratum([]byte{0x0a, 0x05, 'a'}); !errors.Is(err, ErrFormat) {
		t.Errorf("truncated: %v, want ErrFormat", err)
	}
	if _, err := PackStratum(&Pipeline{Name: "x"}); !errors.Is(err, ErrFormat) {
		t.Errorf("no profile: %v, want ErrFormat", err)
	}
}

func FuzzUnpack(f *testing.F) {
	a, _ := PackStratum(tiny)
	b, _ := PackBFRuntime(tiny)
	f.Add(a)
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		if p, err := UnpackStratum(in); err == nil {
			if _, err := PackStratum(p); err != nil && len(p.Profiles) > 0 {
				t.Fatal(err)
			}
		}
		if p, err := UnpackBFRuntime(in); err == nil {
			out, err := PackBFRuntime(p)
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("round trip: %x, %v", out, err)
			}
		}
	})
}

// writeTree writes files (name → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const confJSON = `{
  "chip_list": [{"id": "asic-0", "chip_family": "tofino", "instance": 0}],
  "instance": 0,
  "p4_devices": [{
    "device-id": 0,
    "p4_programs": [{
      "program-name": "lumina",
      "bfrt-config": "share/tofinopd/lumina/bf-rt.json",
      "p4_pipelines": [{
        "p4_pipeline_name": "pipe",
        "context": "share/tofinopd/lumina/pipe/context.json",
        "config": "share/tofinopd/lumina/pipe/tofino.bin",
        "pipe_scope": [0, 1, 2, 3],
        "path": "share/tofinopd/lumina"
      }]
    }],
    "agent0": "lib/libpltfm_mgr.so"
  }]
}`

func TestLoad(t *testing.T) {
	want := &Pipeline{Name: "lumina", BFRuntime: []byte(`{"tables":[]}`),
		Profiles: []Profile{{Name: "pipe", Context: []byte(`{"program_name":"lumina"}`), Binary: []byte("\x00BIN"), PipeScope: []uint32{0, 1, 2, 3}}}}
	layouts := map[string]map[string]string{
		// An installed program: the .conf in share/p4/targets/tofino,
		// paths relative to the install directory, via $SDE_INSTALL.
		"installed": {"share/p4/targets/tofino/lumina.conf": confJSON, "share/tofinopd/lumina/bf-rt.json": `{"tables":[]}`,
			"share/tofinopd/lumina/pipe/context.json": `{"program_name":"lumina"}`, "share/tofinopd/lumina/pipe/tofino.bin": "\x00BIN"},
		// bf-p4c -o out: the .conf next to bf-rt.json and pipe/.
		"compiler output": {"out/lumina.conf": confJSON, "out/bf-rt.json": `{"tables":[]}`,
			"out/pipe/context.json": `{"program_name":"lumina"}`, "out/pipe/tofino.bin": "\x00BIN"},
	}
	for name, files := range layouts {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, files)
			conf := filepath.Join(dir, "out/lumina.conf")
			if name == "installed" {
				t.Setenv("SDE_INSTALL", dir)
				conf = filepath.Join(dir, "share/p4/targets/tofino/lumina.conf")
			}
			got, err := Load(conf)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("Load = %+v, %v, want %+v", got, err, want)
			}
			if _, err := PackBFRuntime(got); err != nil {
				t.Error(err)
			}
		})
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"lumina.conf": confJSON, "bf-rt.json": "{}"})
	if _, err := Load(filepath.Join(dir, "lumina.conf")); !errors.Is(err, ErrConf) {
		t.Errorf("Load without context.json = %v, want ErrConf", err)
	}
	writeTree(t, dir, map[string]string{"bad.conf": `{"p4_devices": []}`})
	if _, err := Load(filepath.Join(dir, "bad.conf")); !errors.Is(err, ErrConf) {
		t.Errorf("Load(no device) = %v, want ErrConf", err)
	}
}
