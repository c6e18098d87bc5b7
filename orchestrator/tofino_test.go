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
)

// TestTofinoPauses runs the remote testbed's Tofino path of
// examples/pause-reaction.yaml against the fake BfRt server: at the
// intake the driver enables PFC on both hosts' ports for priority 3, and
// the packet generator's apps it enables generate exactly the pause
// injection the sim testbed schedules on the software switch
// (bfrtfake.TestFakeDrivesSoftwareSwitch shows that injection sends the
// same frames at the same times); after traffic the switch's PFC counters
// are $PORT_STAT's counts since the intake; at the end the apps are
// disabled.
func TestTofinoPauses(t *testing.T) {
	tc, err := config.Load("../examples/pause-reaction.yaml")
	if err != nil {
		t.Fatal(err)
	}
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
	d.pl.bfrt, d.pl.bfrtProgram, d.pl.tofinoChip = addr, "lumina", bfrt.Tofino1
	if err := d.schedulePauses(ctx); err != nil {
		t.Fatal(err)
	}
	want := d.run.pauseInjection(tc.PFCEvents[0]) // what pauseAt hands the software switch
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
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
	ws := srv.Writes()
	last := ws[len(ws)-1].GetUpdates()[0].GetEntity().GetTableEntry()
	if len(ws) != 7 || last.GetTableId() != 0xFF020002 || len(last.GetData().GetFields()) != 1 ||
		last.GetData().GetFields()[0].GetFieldId() != 12 || last.GetData().GetFields()[0].GetBoolVal() {
		t.Errorf("%d writes (2 PFC enables, port, buffer, app, enable, disable), the last %v", len(ws), last)
	}
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
}
