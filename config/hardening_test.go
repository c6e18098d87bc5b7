package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// Issue #17, point 6: Load reads at most MaxFileSize bytes, quickly.
// Issue #38, point 5: a device or a FIFO is refused unread, the FIFO
// without blocking.
func TestLoadBounded(t *testing.T) {
	const limit = 4 << 20
	big := filepath.Join(t.TempDir(), "big.yaml")
	data := []byte("name: big\n" + strings.Repeat("# padding padding padding padding\n", limit/34+1))
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "not a regular file (a character device)"},
		{fifo, "not a regular file (a FIFO)"},
		{big, "larger than the 4 MiB limit"},
	} {
		path := tc.path
		if _, err := os.Stat(path); err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		done := make(chan error, 1)
		go func() { _, err := Load(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load(%s) error = %v, want one naming the file and %q", path, err, tc.want)
			}
			if errors.Is(err, ErrInvalid) {
				t.Errorf("Load(%s) error matches ErrInvalid; want an unreadable-file error", path)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) still running after 10 s", path)
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

// Issue #23 (and #17 point 5): num-pkts is a disk budget per worker; a
// test that certainly sends more packets than a dumper may write is
// refused at num-pkts, with the number that would do. Memory no longer
// depends on num-pkts: a billion packets of 9216 bytes is fine.
func TestDumperCapacity(t *testing.T) {
	tests := []struct{ in, want string }{
		// 2 QPs × 10 messages × 10 packets = 200 packets over two dumpers.
		{"dumpers:\n  - num-pkts: 99\n  - {}\ntraffic: {num-qps: 2, num-msgs-per-qp: 10, message-size: 10240}\n",
			`t.yaml:2:15: num-pkts: each worker of dumper "dumper-0" will receive at least 100 packets (the test mirrors at least 200), more than num-pkts 99; raise num-pkts to at least 100 (about twice that with acknowledgements), or remove it: without it the disk is the limit`},
		// Weight 3 of 4 and two workers: 150 / 2 = 75; READ adds a request per message.
		{"dumpers:\n  - {num-pkts: 70, weight: 3, workers: 2}\n  - {}\ntraffic: {num-qps: 2, num-msgs-per-qp: 10, message-size: 9216, rdma-verb: read}\n",
			`t.yaml:2:16: num-pkts: each worker of dumper "dumper-0" will receive at least 75 packets (the test mirrors at least 200), more than num-pkts 70; raise num-pkts to at least 75 (about twice that with acknowledgements), or remove it: without it the disk is the limit`},
		{"requester-mirror:\n  pkt-dump-conf:\n    num-pkts: 16383\ntraffic: {num-msgs-per-qp: 100, message-size: 1048576}\n",
			`t.yaml:3:15: num-pkts: each worker of dumper "requester-mirror" will receive at least 102400 packets (the test mirrors at least 102400), more than num-pkts 16383; raise num-pkts to at least 102400 (about twice that with acknowledgements), or remove it: without it the disk is the limit`},
	}
	for _, tt := range tests {
		_, err := Parse("t.yaml", []byte(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) error =\n%v\nwant\n%s", tt.in, err, tt.want)
		}
	}
	for _, ok := range []string{
		"dumpers:\n  - num-pkts: 100\n  - {}\ntraffic: {num-qps: 2, num-msgs-per-qp: 10, message-size: 10240}\n",
		"dumpers:\n  - {num-pkts: 1073741824, snap-len: 9216, workers: 128}\n",
	} {
		if _, err := Parse("t.yaml", []byte(ok)); err != nil {
			t.Errorf("Parse(%q) = %v, want no error", ok, err)
		}
	}
	// The dumper itself takes at most 128 workers.
	if _, err := Parse("t.yaml", []byte("dumpers:\n  - workers: 129\n")); err == nil || err.Error() != "t.yaml:2:14: workers: want 1..128, got 129" {
		t.Errorf("workers 129: error = %v", err)
	}
}

// Issue #17, point 5: with the machine's limits, a test that needs more
// memory or disk than there is fails validation, and names the fix; the
// testbed override counts (netns dumpers have rings).
func TestResourceLimits(t *testing.T) {
	mem := Resources{MemoryBytes: 4 << 30}
	disk := Resources{DiskFree: func(path string) (int64, bool) { return 1 << 30, path == "results" }}
	tests := []struct {
		in   string
		o    LoadOptions
		want string
	}{
		{"traffic: {num-qps: 16384, message-size: 2147483648}\n", LoadOptions{Resources: mem},
			`t.yaml:1:41: the test needs about 96 TiB of memory on this machine (messages 3 × 16384 QPs × 2147483648 B = 96 TiB, dumpers 8 MiB, held packets 0 B, records 140 MiB: graph data 128 MiB, 0 packets of events and PFC frames, 16384 messages, base 256 MiB), more than the limit of 4 GiB; use fewer QPs, messages or events, smaller messages or fewer dumper workers, or raise the limit with --memory-limit`},
		{"dumpers:\n  - workers: 64\n", LoadOptions{Resources: mem, Testbed: new(TestbedNetns)},
			`t.yaml:2:3: the test needs about 4.5 GiB of memory on this machine (messages 3 × 1 QPs × 4096 B = 12 KiB, dumpers 4.2 GiB, held packets 0 B, records 1.8 KiB: graph data 1 KiB, 0 packets of events and PFC frames, 1 messages, base 256 MiB), more than the limit of 4 GiB; use fewer QPs, messages or events, smaller messages or fewer dumper workers, or raise the limit with --memory-limit`},
		// At least 10,000,000 packets × (128+16) B, twice (the dumper
		// files and the trace) = 2.7 GiB.
		{"num-repeats: 1\ntraffic: {num-msgs-per-qp: 1000, message-size: 10240000}\n", LoadOptions{Resources: disk},
			`t.yaml:1:14: the results need at least 2.7 GiB of disk (1 repeats × at least 10000000 packets, traces and dumper files), 1 GiB are free under the results directory; free some, choose another with -o, keep-dumper-files: false (halves it), or lower snap-len, num-msgs-per-qp or num-repeats`},
	}
	for _, tt := range tests {
		_, err := ParseWith("t.yaml", []byte(tt.in), tt.o)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseWith(%q) error =\n%v\nwant\n%s", tt.in, err, tt.want)
		}
	}
	// The same tests without limits, and on sim, pass.
	for _, tt := range tests[:2] {
		if _, err := Parse("t.yaml", []byte(tt.in)); err != nil {
			t.Errorf("Parse(%q) without limits = %v", tt.in, err)
		}
	}
	if _, err := ParseWith("t.yaml", []byte("dumpers:\n  - workers: 64\n"), LoadOptions{Resources: mem}); err != nil {
		t.Errorf("64 sim workers: %v", err)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"8GiB": 8 << 30, "512M": 512 << 20, "1.5T": 3 << 39, "1073741824": 1 << 30, "64 KiB": 64 << 10} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1G", "lots", "1e30"} {
		if _, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = nil error", in)
		}
	}
	for n, want := range map[int64]string{512: "512 B", 1536: "1.5 KiB", 64 << 20: "64 MiB", 1 << 40: "1 TiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
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
			got, err := ParseWith("t.yaml", []byte(tt.in), LoadOptions{Testbed: new(tt.tb)})
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
	if _, err := ParseWith("t.yaml", []byte("testbed: sim\ndumpers: [{backend: afpacket}]\n"), LoadOptions{Testbed: new(TestbedNetns)}); err == nil {
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

// Issue #25: e810 has no software personality; off the remote testbed
// validation refuses it at nic.type (run would fail there), unless the
// test gives a personality file of its own.
func TestE810RefusedOffRemote(t *testing.T) {
	in := "requester:\n  nic: {type: e810, personality: cx5}\n"
	_, err := Parse("t.yaml", []byte(in))
	if err == nil || !strings.HasPrefix(err.Error(), "t.yaml:2:15: nic type e810: no software personality for this NIC model") ||
		!strings.HasSuffix(err.Error(), "(testbed sim)") {
		t.Errorf("e810 on sim: %v", err)
	}
	if _, err := Parse("t.yaml", []byte("requester:\n  nic: {type: e810, personality: mine.yaml}\n")); err != nil {
		t.Errorf("e810 with a personality file: %v", err)
	}
	remote := "testbed: remote\nswitch: {control-ip: s}\nrequester: {control-ip: a, nic: {type: e810}}\nresponder: {control-ip: b}\ndumpers: [{control-ip: d}]\n"
	if _, err := Parse("t.yaml", []byte(remote)); err != nil {
		t.Errorf("e810 on remote: %v", err)
	}
}
