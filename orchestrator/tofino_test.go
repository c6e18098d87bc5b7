package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/injector"
	"github.com/netlumina/lumina/p4src/tofino/bfrt"
	"github.com/netlumina/lumina/p4src/tofino/bfrt/bfrtfake"
	bfrtpb "github.com/netlumina/lumina/proto/bfrt/bfrtpb"
)

// TestTofinoPauses runs the remote testbed's Tofino path of
// examples/pause-reaction.yaml, with a second pause on the same host,
// against the fake BfRt server: before the intake (tofinoSetup) the driver
// enables PFC on both hosts' ports for priority 3, reads the counters and
// writes the packet generator's set-up with the apps disabled, and no
// pause starts; at the intake it sends one request with both apps'
// enables, which generate exactly the pause injections the sim testbed
// schedules on the software switch (bfrtfake.TestFakeDrivesSoftwareSwitch
// shows that injection sends the same frames at the same times); after
// traffic the switch's PFC counters are $PORT_STAT's counts since the
// set-up; at the end the apps are disabled.
func TestTofinoPauses(t *testing.T) {
	tc, err := config.Load("../examples/pause-reaction.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A second pause, later, on the same host: its app's enable goes in
	// the same request as the first's.
	ev2 := tc.PFCEvents[0]
	ev2.StartUs += 300
	tc.PFCEvents = append(tc.PFCEvents, ev2)
	d, _ := fakeDriver(t, tc, nil)
	var mu sync.Mutex
	var got []injector.PauseInjection
	reads := map[uint32]uint64{}
	srv := &bfrtfake.Server{Chip: bfrt.Tofino1,
		OnPause: func(app bfrtfake.PauseApp) error {
			port, prio, quanta, start, dur, iv, err := app.Injection()
			mu.Lock()
			got = append(got, injector.PauseInjection{Port: port, Priority: prio, Quanta: quanta, Start: start, Duration: dur, Interval: iv})
			mu.Unlock()
			return err
		},
		Counters: func(port uint32) (c bfrt.PortPFC) {
			mu.Lock()
			defer mu.Unlock()
			reads[port]++
			if reads[port] > 1 {
				c.Tx[3] = 1000 + 10 // ten more since the first read
			} else {
				c.Tx[3] = 1000
			}
			c.Rx[3] = 7
			return c
		}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := srv.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d.pl.injector = nil
	// A program built with -DLUMINA_PKTGEN_PORT=70 (`--pktgen-port 70`).
	d.pl.bfrt, d.pl.bfrtProgram, d.pl.tofinoChip, d.pl.pktgenPort = addr, "lumina", bfrt.Tofino1, 70
	// Before the intake: everything but the enables, one update a request.
	if err := d.tofinoSetup(ctx); err != nil {
		t.Fatal(err)
	}
	ws := srv.Writes()
	if len(got) != 0 || len(ws) != 7 {
		t.Fatalf("set-up: %d pauses started, %d writes, want none and 7 (2 PFC enables, port, 2 buffers, 2 apps)", len(got), len(ws))
	}
	// The generator on the host's pipe's port 70 (port_cfg is the first
	// pktgen write, after the 2 PFC enables).
	if te := ws[2].GetUpdates()[0].GetEntity().GetTableEntry(); te.GetTableId() != 0xFF020001 ||
		string(te.GetKey().GetFields()[0].GetExact().GetValue()) != string([]byte{0, 0, 0, byte(d.pl.hostPorts[0]&^0x7F | 70)}) {
		t.Errorf("pktgen port_cfg %v, want port 70 of host port %d's pipe", te, d.pl.hostPorts[0])
	}
	for i, w := range ws {
		if te := w.GetUpdates()[0].GetEntity().GetTableEntry(); len(w.GetUpdates()) != 1 || te.GetTableId() == 0xFF020002 && !hasFalseEnable(te) {
			t.Errorf("set-up write %d: %v", i, w)
		}
	}
	// The intake: one request, both enables.
	if err := d.schedulePauses(ctx); err != nil {
		t.Fatal(err)
	}
	ws = srv.Writes()
	if len(ws) != 8 || len(ws[7].GetUpdates()) != 2 {
		t.Fatalf("intake: %d requests in all, want 8, the last with the 2 enables: %v", len(ws), ws[len(ws)-1])
	}
	for i, u := range ws[7].GetUpdates() {
		f := u.GetEntity().GetTableEntry().GetData().GetFields()
		if len(f) != 1 || f[0].GetFieldId() != 12 || !f[0].GetBoolVal() {
			t.Errorf("enable %d: %v", i, u)
		}
	}
	want := []injector.PauseInjection{d.run.pauseInjection(tc.PFCEvents[0]), d.run.pauseInjection(tc.PFCEvents[1])} // what pauseAt hands the software switch
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pauses through BfRt %+v, want the sim testbed's %+v", got, want)
	}
	p0, p1 := d.pl.hostPorts[0], d.pl.hostPorts[1]
	if m := srv.PFCMaps(); !reflect.DeepEqual(m, map[uint32][2]uint64{p0: {8, 8}, p1: {8, 8}}) {
		t.Errorf("$PORT PFC maps %v, want priority 3 (8) on ports %d and %d", m, p0, p1)
	}
	if err := d.readSwitchPFC(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []uint32{p0, p1} {
		c := d.run.SwitchPFC.Counters[p][3]
		if c.TxPause != 10 || c.RxPause != 0 {
			t.Errorf("port %d priority 3: tx_pause %d rx_pause %d, want 10 and 0 (counts since the intake)", p, c.TxPause, c.RxPause)
		}
	}
	d.close()
	ws = srv.Writes()
	last := ws[len(ws)-1].GetUpdates()[0].GetEntity().GetTableEntry()
	if len(ws) != 10 || last.GetTableId() != 0xFF020002 || !hasFalseEnable(last) || len(last.GetData().GetFields()) != 1 {
		t.Errorf("%d writes (7 of the set-up, the enables, 2 disables), the last %v", len(ws), last)
	}
}

// hasFalseEnable: te writes app_enable (field 12) false.
func hasFalseEnable(te *bfrtpb.TableEntry) bool {
	for _, f := range te.GetData().GetFields() {
		if f.GetFieldId() == 12 {
			return !f.GetBoolVal()
		}
	}
	return false
}

// TestRemotePauseNeedsBfRt: a remote run with a pause and no BfRt server
// is refused before any agent is dialled, naming the flag.
func TestRemotePauseNeedsBfRt(t *testing.T) {
	tc, err := config.Load("../examples/pause-reaction.yaml")
	if err != nil {
		t.Fatal(err)
	}
	run, err := newRun(tc, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123"), 0o600); err != nil {
		t.Fatal(err)
	}
	tb, err := newRemoteBed(RemoteOptions{TokenFile: token, CertDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.close()
	_, err = tb.place(context.Background(), run, func(string) {})
	if err == nil || !strings.Contains(err.Error(), "--bfrt HOST[:PORT]") {
		t.Errorf("place without --bfrt: %v", err)
	}
	if _, err := newRemoteBed(RemoteOptions{TokenFile: token, CertDir: dir, Tofino: 3}); err == nil || !strings.Contains(err.Error(), "Tofino 3 (1 or 2)") {
		t.Errorf("Tofino 3: %v", err)
	}
	if _, err := newRemoteBed(RemoteOptions{TokenFile: token, CertDir: dir, Tofino: 1, PktgenPort: 6}); err == nil || !strings.Contains(err.Error(), "--pktgen-port 6 is not a pktgen port of Tofino 1") {
		t.Errorf("Tofino 1 pktgen port 6: %v", err)
	}
	if _, err := newRemoteBed(RemoteOptions{TokenFile: token, CertDir: dir, Tofino: 2, PktgenPort: 6}); err != nil {
		t.Errorf("Tofino 2 pktgen port 6: %v", err)
	}
}
