package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue #17, point 4: values that become path components must not leave
// the results directory.
func TestPathComponentValues(t *testing.T) {
	tests := []struct{ in, want string }{
		{"name: ../../x\n", `t.yaml:1:7: name: want a name without '/', '\', NUL, "." or "..", got "../../x"`},
		{"name: a/b\n", `t.yaml:1:7: name: want a name without '/', '\', NUL, "." or "..", got "a/b"`},
		{"name: 'a\\b'\n", `t.yaml:1:7: name: want a name without '/', '\', NUL, "." or "..", got "a\\b"`},
		{"name: .\n", `t.yaml:1:7: name: want a name without '/', '\', NUL, "." or "..", got "."`},
		{"name: ..\n", `t.yaml:1:7: name: want a name without '/', '\', NUL, "." or "..", got ".."`},
		{"name: \"a\\0b\"\n", `t.yaml:1:7: name: want a name without '/', '\', NUL, "." or "..", got "a\x00b"`},
		{"aggregate-pcap-filename: \"t\\0.pcap\"\n", `t.yaml:1:26: aggregate-pcap-filename: want a file name without NUL, got "t\x00.pcap"`},
		{"aggregate-pcap-filename: ../t.pcap\n", `t.yaml:1:26: aggregate-pcap-filename: want a file name without a directory, got "../t.pcap"`},
		{"dumpers:\n  - dump-filename: \"d\\0.pcap\"\n", `t.yaml:2:20: dump-filename: want a file name without NUL, got "d\x00.pcap"`},
		{"dumpers:\n  - dump-filename: ..\n", `t.yaml:2:20: dump-filename: want a file name without a directory, got ".."`},
		{"requester-mirror:\n  pkt-dump-conf:\n    dump-filename: 'x\\y'\n", `t.yaml:3:20: dump-filename: want a file name without a directory, got "x\\y"`},
		{"dumpers:\n  - name: \"d\\0\"\n", `t.yaml:2:11: name: want letters, digits, '.', '_' or '-', got "d\x00"`},
		{"dumpers:\n  - name: ../d\n", `t.yaml:2:11: name: want letters, digits, '.', '_' or '-', got "../d"`},
		{"result-path: \"r\\0\"\n", `t.yaml:1:14: result-path: want a path without NUL, got "r\x00"`},
	}
	for _, tt := range tests {
		_, err := Parse("t.yaml", []byte(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) error =\n%v\nwant\n%s", tt.in, err, tt.want)
		}
	}
	// The default name comes from the file name; it must not be ".." either.
	for _, f := range []string{"...yaml", "dir/..yaml", "x/..", "."} {
		if got := defaultName(f); got == "." || got == ".." || strings.ContainsAny(got, `/\`) {
			t.Errorf("defaultName(%q) = %q, want a plain name", f, got)
		}
	}
}

// Issue #17, point 6: Load reads at most MaxFileSize bytes, quickly, from
// any file, including devices.
func TestLoadBounded(t *testing.T) {
	const limit = 4 << 20
	big := filepath.Join(t.TempDir(), "big.yaml")
	data := []byte("name: big\n" + strings.Repeat("# padding padding padding padding\n", limit/34+1))
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/zero", big} {
		if _, err := os.Stat(path); err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		done := make(chan error, 1)
		start := time.Now()
		go func() { _, err := Load(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "4 MiB") {
				t.Errorf("Load(%s) error = %v, want one naming the file and the 4 MiB limit", path, err)
			}
			if errors.Is(err, ErrInvalid) {
				t.Errorf("Load(%s) error matches ErrInvalid; want an unreadable-file error", path)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("Load(%s) took %v", path, d)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Load(%s) still running after 5 s", path)
		}
	}
	// A file of exactly the limit is read.
	ok := filepath.Join(t.TempDir(), "ok.yaml")
	data = []byte("name: ok\n" + strings.Repeat("#", limit-len("name: ok\n")-1) + "\n")
	if err := os.WriteFile(ok, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ok); err != nil {
		t.Errorf("Load(file of exactly the limit) error = %v", err)
	}
}

// Issue #17, point 7a: a dumper whose capture buffers cannot fit is
// rejected at num-pkts, as the run would fail.
func TestDumperMemoryLimit(t *testing.T) {
	tests := []struct{ in, want string }{
		{"dumpers:\n  - num-pkts: 1073741824\n    snap-len: 9216\n",
			`t.yaml:2:15: num-pkts: dumper "dumper-0" needs 9216 GiB of capture memory (num-pkts 1073741824 × snap-len 9216 B × 1 worker), more than the 16 GiB a dumper may use; set num-pkts to at most 1864135 or lower snap-len or workers`},
		{"requester-mirror:\n  pkt-dump-conf:\n    num-pkts: 1073741824\n",
			`t.yaml:3:15: num-pkts: dumper "requester-mirror" needs 128 GiB of capture memory (num-pkts 1073741824 × snap-len 128 B × 1 worker), more than the 16 GiB a dumper may use; set num-pkts to at most 134217728 or lower snap-len or workers`},
		{"dumpers:\n  - workers: 128\n    snap-len: 256\n",
			`t.yaml:2:14: num-pkts: dumper "dumper-0" needs 32 GiB of capture memory (num-pkts 1048576 × snap-len 256 B × 128 workers), more than the 16 GiB a dumper may use; set num-pkts to at most 524288 or lower snap-len or workers`},
	}
	for _, tt := range tests {
		_, err := Parse("t.yaml", []byte(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) error =\n%v\nwant\n%s", tt.in, err, tt.want)
		}
	}
	// The dumper itself takes at most 128 workers.
	if _, err := Parse("t.yaml", []byte("dumpers:\n  - workers: 129\n")); err == nil || err.Error() != "t.yaml:2:14: workers: want 1..128, got 129" {
		t.Errorf("workers 129: error = %v", err)
	}
	// The defaults with the most workers fit exactly.
	if _, err := Parse("t.yaml", []byte("dumpers:\n  - workers: 128\n")); err != nil {
		t.Errorf("128 workers at the default num-pkts and snap-len: %v", err)
	}
}

// Issue #17, point 7: num-repeats has an upper bound.
func TestNumRepeatsLimit(t *testing.T) {
	want := `t.yaml:1:14: num-repeats: want 1..10000, got 10001`
	if _, err := Parse("t.yaml", []byte("num-repeats: 10001\n")); err == nil || err.Error() != want {
		t.Errorf("num-repeats 10001: error = %v, want %s", err, want)
	}
	if _, err := Parse("t.yaml", []byte("num-repeats: 10000\n")); err != nil {
		t.Errorf("num-repeats 10000: %v", err)
	}
}

// Issue #17, point 7c: an overridden testbed is validated as lumina run
// would use it, by ParseWith (with positions) and WithTestbed alike.
func TestWithTestbed(t *testing.T) {
	const simFile = "name: s\ndumpers:\n  - {name: a}\n  - {name: b, backend: sim}\n"
	const dpdkFile = "requester: {control-ip: r}\nresponder: {control-ip: p}\nswitch: {control-ip: s}\n" +
		"dumpers:\n  - {name: a, control-ip: d, backend: dpdk, eal-args: [--no-pci]}\n"
	tests := []struct {
		name, in string
		tb       Testbed
		want     string // ParseWith's error; "" for none
		backends []DumperBackend
	}{
		{"sim on netns", simFile, TestbedNetns, "", []DumperBackend{BackendAFPacket, BackendAFPacket}},
		{"sim on sim", simFile, TestbedSim, "", []DumperBackend{BackendSim, BackendSim}},
		{"sim on remote", simFile, TestbedRemote, "t.yaml:1:1: --testbed remote: requester has no control-ip\n" +
			"t.yaml:1:1: --testbed remote: responder has no control-ip\n" +
			"t.yaml:1:1: --testbed remote: switch has no control-ip\n" +
			`t.yaml:3:5: --testbed remote: dumper "a" has no control-ip` + "\n" +
			`t.yaml:4:5: --testbed remote: dumper "b" has no control-ip`, nil},
		{"dpdk on netns", dpdkFile, TestbedNetns, "", []DumperBackend{BackendDPDK}},
		{"dpdk on remote", dpdkFile, TestbedRemote, "", []DumperBackend{BackendDPDK}},
		{"dpdk on sim", dpdkFile, TestbedSim,
			`t.yaml:5:55: --testbed sim: dumper "a": eal-args are only used by backend dpdk, and the backend becomes sim`, nil},
		{"default dumpers on remote", "testbed: sim\nrequester: {control-ip: r}\nresponder: {control-ip: p}\nswitch: {control-ip: s}\n", TestbedRemote,
			"t.yaml:1:10: --testbed remote: dumper \"dumper-0\" has no control-ip\n" +
				"t.yaml:1:10: --testbed remote: dumper \"dumper-1\" has no control-ip", nil},
		{"host key", "requester: {nic: {type: cx5}}\n", TestbedRemote,
			"t.yaml:1:1: --testbed remote: requester has no control-ip\n" +
				"t.yaml:1:1: --testbed remote: responder has no control-ip\n" +
				"t.yaml:1:1: --testbed remote: switch has no control-ip\n" +
				"t.yaml:1:1: --testbed remote: dumper \"dumper-0\" has no control-ip\n" +
				"t.yaml:1:1: --testbed remote: dumper \"dumper-1\" has no control-ip", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseWith("t.yaml", []byte(tt.in), LoadOptions{Testbed: tt.tb, TestbedSet: true})
			if (err == nil) != (tt.want == "") || err != nil && err.Error() != tt.want {
				t.Fatalf("ParseWith(--testbed %s) error =\n%v\nwant\n%s", tt.tb, err, tt.want)
			}
			plain, perr := Parse("t.yaml", []byte(tt.in))
			if perr != nil {
				t.Fatal(perr)
			}
			before := plain.Testbed
			c, werr := plain.WithTestbed(tt.tb)
			if (werr == nil) != (err == nil) {
				t.Fatalf("WithTestbed(%s) error = %v, ParseWith's = %v: they must agree", tt.tb, werr, err)
			}
			if plain.Testbed != before {
				t.Errorf("WithTestbed changed its receiver")
			}
			if werr != nil {
				if !errors.Is(werr, ErrInvalid) || !strings.HasPrefix(werr.Error(), "t.yaml: --testbed "+tt.tb.String()+": ") {
					t.Errorf("WithTestbed error = %v, want one naming the file and testbed, matching ErrInvalid", werr)
				}
				return
			}
			for _, x := range []*Test{got, c} {
				if x.Testbed != tt.tb {
					t.Errorf("Testbed = %v, want %v", x.Testbed, tt.tb)
				}
				for i, b := range tt.backends {
					if x.Dumpers[i].Backend != b {
						t.Errorf("dumper %d backend = %v, want %v", i, x.Dumpers[i].Backend, b)
					}
				}
			}
		})
	}
	// A file that is invalid by itself stays invalid, whatever the override.
	if _, err := ParseWith("t.yaml", []byte("testbed: sim\ndumpers: [{backend: afpacket}]\n"), LoadOptions{Testbed: TestbedNetns, TestbedSet: true}); err == nil {
		t.Errorf("ParseWith: a file invalid as it is passed with --testbed netns")
	}
	for _, s := range []string{"sim", "NetNS", "remote"} {
		if _, err := ParseTestbed(s); err != nil {
			t.Errorf("ParseTestbed(%q): %v", s, err)
		}
	}
	if _, err := ParseTestbed("hw"); err == nil {
		t.Errorf("ParseTestbed(hw) = nil error")
	}
}
