package injector_test

import (
	"context"
	"errors"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/netlumina/lumina/controlplane"
	"github.com/netlumina/lumina/p4src"
)

// rawClient is a P4Runtime client without a stream.
func rawClient(t *testing.T, addr string) p4v1.P4RuntimeClient {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return p4v1.NewP4RuntimeClient(conn)
}

// arbitrate opens a stream for role with election ID eid on a connection
// of its own and returns the first answer (an arbitration update's status
// code, or the stream's error) and a client on the stream's connection.
func arbitrate(t *testing.T, addr, role string, eid uint64) (p4v1.P4Runtime_StreamChannelClient, context.CancelFunc, codes.Code, p4v1.P4RuntimeClient) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cl := rawClient(t, addr)
	st, err := cl.StreamChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: 7, Role: &p4v1.Role{Name: role}, ElectionId: &p4v1.Uint128{Low: eid}}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		return st, cancel, status.Code(err), cl
	}
	return st, cancel, codes.Code(resp.GetArbitration().GetStatus().GetCode()), cl
}

func fwdWrite(c p4v1.P4RuntimeClient, role string, eid uint64, mac byte) error {
	_, err := c.Write(context.Background(), &p4v1.WriteRequest{DeviceId: 7, Role: role, ElectionId: &p4v1.Uint128{Low: eid},
		Atomicity: p4v1.WriteRequest_CONTINUE_ON_ERROR, Updates: []*p4v1.Update{fwdEntry([]byte{2, 0, 0, 0, 0, mac}, []byte{1})}})
	return err
}

func setPipe(c p4v1.P4RuntimeClient, role string, eid uint64) error {
	info, _ := p4src.P4Info()
	_, err := c.SetForwardingPipelineConfig(context.Background(), &p4v1.SetForwardingPipelineConfigRequest{DeviceId: 7, Role: role,
		ElectionId: &p4v1.Uint128{Low: eid}, Action: p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: info}})
	return err
}

// TestArbitrationOtherRole: only the default role exists. A controller
// naming another role is refused with NOT_FOUND (P4Runtime §5: a role
// that does not match any of the device's roles), and neither its Write
// nor its SetForwardingPipelineConfig is applied.
func TestArbitrationOtherRole(t *testing.T) {
	addr := startServer(t)
	_, _, c, cl := arbitrate(t, addr, "", 5)
	if c != codes.OK {
		t.Fatalf("default role: arbitration %v, want OK", c)
	}
	if err := setPipe(cl, "", 5); err != nil {
		t.Fatal(err)
	}
	_, _, c, _ = arbitrate(t, addr, "intruder", 9)
	if c != codes.NotFound {
		t.Errorf("role %q: arbitration %v, want NOT_FOUND", "intruder", c)
	}
	if err := fwdWrite(cl, "intruder", 9, 1); status.Code(err) != codes.NotFound {
		t.Errorf("Write for role %q: %v, want NOT_FOUND", "intruder", err)
	}
	if err := setPipe(cl, "intruder", 9); status.Code(err) != codes.NotFound {
		t.Errorf("SetForwardingPipelineConfig for role %q: %v, want NOT_FOUND", "intruder", err)
	}
	if err := fwdWrite(cl, "", 5, 2); err != nil {
		t.Errorf("the default role's primary cannot write: %v", err)
	}
}

// TestArbitrationWriteNeedsStream: a Write (or pipeline push) is accepted
// only with the primary's election ID, while the primary's stream is
// open, and on that stream's connection; a lower or higher election ID,
// or the primary's from a client without a stream, is refused
// (P4Runtime §"Write RPC": only the primary writes).
func TestArbitrationWriteNeedsStream(t *testing.T) {
	addr := startServer(t)
	stranger := rawClient(t, addr) // never opens a stream
	// No stream at all: no primary.
	if err := setPipe(stranger, "", 3); status.Code(err) != codes.PermissionDenied {
		t.Errorf("SetForwardingPipelineConfig without a stream: %v, want PERMISSION_DENIED", err)
	}
	backup, _, c, bcl := arbitrate(t, addr, "", 2)
	if c != codes.OK {
		t.Fatalf("arbitration %v", c)
	}
	_, cancel, c, pcl := arbitrate(t, addr, "", 3)
	if c != codes.OK {
		t.Fatalf("arbitration %v", c)
	}
	if err := setPipe(stranger, "", 3); status.Code(err) != codes.PermissionDenied {
		t.Errorf("SetForwardingPipelineConfig with the primary's election ID from a client without a stream: %v, want PERMISSION_DENIED", err)
	}
	if err := setPipe(pcl, "", 3); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name string
		cl   p4v1.P4RuntimeClient
		eid  uint64
	}{
		{"the backup's (lower) election ID", bcl, 2},
		{"an unknown lower election ID", stranger, 1},
		{"a higher election ID and no stream", stranger, 4},
		{"the primary's election ID and no stream", stranger, 3},
		{"the primary's election ID on the backup's connection", bcl, 3},
	} {
		if err := fwdWrite(w.cl, "", w.eid, 1); status.Code(err) != codes.PermissionDenied {
			t.Errorf("Write with %s: %v, want PERMISSION_DENIED", w.name, err)
		}
	}
	if err := fwdWrite(pcl, "", 3, 1); err != nil {
		t.Errorf("Write with the primary's election ID on its stream's connection: %v", err)
	}
	// The primary's stream closes: the backup, the live stream with the
	// highest election ID, becomes primary and hears it (P4Runtime
	// §"Client Arbitration Update"); the departed primary's election ID
	// writes nothing.
	cancel()
	for {
		r, err := backup.Recv()
		if err != nil {
			t.Fatal(err)
		}
		a := r.GetArbitration()
		if c := codes.Code(a.GetStatus().GetCode()); c == codes.OK {
			if a.GetElectionId().GetLow() != 2 {
				t.Errorf("promotion notice names election ID %d, want 2", a.GetElectionId().GetLow())
			}
			break
		} else if c != codes.AlreadyExists { // (the notice of 3 becoming primary)
			t.Fatalf("the backup's notice when the primary left: %v, want OK (promoted)", a)
		}
	}
	if err := fwdWrite(pcl, "", 3, 2); status.Code(err) != codes.PermissionDenied {
		t.Errorf("Write with the departed primary's election ID: %v, want PERMISSION_DENIED", err)
	}
	if err := fwdWrite(bcl, "", 2, 3); err != nil {
		t.Errorf("the promoted backup cannot write: %v", err)
	}
}

// TestWriteWithoutStreamRefused (#38.2): while lumina's control plane is
// primary with election ID 1, a second client with no stream writing
// with election ID 1 gets PERMISSION_DENIED and changes nothing (before,
// its Write was applied: only the ID was compared).
func TestWriteWithoutStreamRefused(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sw, err := controlplane.Dial(ctx, addr, controlplane.DialOptions{DeviceID: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	if err := sw.SetPipeline(ctx, nil, 1); err != nil {
		t.Fatal(err)
	}
	if err := fwdWrite(rawClient(t, addr), "", 1, 9); status.Code(err) != codes.PermissionDenied {
		t.Errorf("Write with the primary's election ID 1 from a client without a stream: %v, want PERMISSION_DENIED", err)
	}
	es, err := sw.Client().ReadTableEntryWildcard(ctx, "Ingress.l2_forward")
	if err != nil || len(es) != 0 {
		t.Errorf("l2_forward after the refused Write: %d entries, %v; want none", len(es), err)
	}
}

// TestArbitrationDepartedHighID (#38.3): a controller with election ID 7
// connects and leaves; lumina's control plane then becomes primary
// (before, the server kept 7 as the highest ID ever seen and every later
// lumina run failed "not the primary controller").
func TestArbitrationDepartedHighID(t *testing.T) {
	addr := startServer(t)
	st, cancel, c, _ := arbitrate(t, addr, "", 7)
	if c != codes.OK {
		t.Fatalf("arbitration %v", c)
	}
	st.CloseSend()
	cancel()
	ctx, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	for {
		sw, err := controlplane.Dial(ctx, addr, controlplane.DialOptions{DeviceID: 7, ElectionID: 1})
		if err == nil {
			if err := sw.SetPipeline(ctx, nil, 1); err != nil {
				t.Errorf("SetPipeline as primary: %v", err)
			}
			sw.Close()
			return
		}
		// The departed stream may not be gone from the server yet: try
		// until the context ends (then the failure is real).
		if ctx.Err() != nil || !errors.Is(err, controlplane.ErrNotPrimary) {
			t.Fatalf("lumina's control plane (election ID 1) after a controller with ID 7 left: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestArbitrationControlplaneClient: lumina's own client still arbitrates,
// pushes the pipeline and installs entries.
func TestArbitrationControlplaneClient(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sw, err := controlplane.Dial(ctx, addr, controlplane.DialOptions{DeviceID: 7, ElectionID: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	if err := sw.SetPipeline(ctx, nil, 1); err != nil {
		t.Fatal(err)
	}
	if err := sw.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	// A raw client with a lower election ID cannot take over.
	_, _, c, cl := arbitrate(t, addr, "", 3)
	if c != codes.AlreadyExists {
		t.Errorf("lower election ID: arbitration %v, want ALREADY_EXISTS (backup)", c)
	}
	if err := fwdWrite(cl, "", 3, 1); status.Code(err) != codes.PermissionDenied {
		t.Errorf("backup Write: %v, want PERMISSION_DENIED", err)
	}
}
