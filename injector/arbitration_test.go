package injector_test

import (
	"context"
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

// arbitrate opens a stream for role with election ID eid and returns the
// first answer: an arbitration update's status code, or the stream's error.
func arbitrate(t *testing.T, addr, role string, eid uint64) (p4v1.P4Runtime_StreamChannelClient, context.CancelFunc, codes.Code) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := rawClient(t, addr).StreamChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: 7, Role: &p4v1.Role{Name: role}, ElectionId: &p4v1.Uint128{Low: eid}}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		return st, cancel, status.Code(err)
	}
	return st, cancel, codes.Code(resp.GetArbitration().GetStatus().GetCode())
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
	_, _, c := arbitrate(t, addr, "", 5)
	if c != codes.OK {
		t.Fatalf("default role: arbitration %v, want OK", c)
	}
	cl := rawClient(t, addr)
	if err := setPipe(cl, "", 5); err != nil {
		t.Fatal(err)
	}
	_, _, c = arbitrate(t, addr, "intruder", 9)
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

// TestArbitrationWriteNeedsStream: a Write (or pipeline push) carrying
// an election ID is accepted only while that ID is the primary's and the
// primary's stream is open; a lower election ID is refused.
func TestArbitrationWriteNeedsStream(t *testing.T) {
	addr := startServer(t)
	cl := rawClient(t, addr)
	// No stream at all: no primary.
	if err := setPipe(cl, "", 3); status.Code(err) != codes.PermissionDenied {
		t.Errorf("SetForwardingPipelineConfig without a stream: %v, want PERMISSION_DENIED", err)
	}
	backup, _, c := arbitrate(t, addr, "", 2)
	if c != codes.OK {
		t.Fatalf("arbitration %v", c)
	}
	_, cancel, c := arbitrate(t, addr, "", 3)
	if c != codes.OK {
		t.Fatalf("arbitration %v", c)
	}
	if err := setPipe(cl, "", 3); err != nil {
		t.Fatal(err)
	}
	if err := fwdWrite(cl, "", 2, 1); status.Code(err) != codes.PermissionDenied {
		t.Errorf("Write with a backup's (lower) election ID: %v, want PERMISSION_DENIED", err)
	}
	if err := fwdWrite(cl, "", 1, 1); status.Code(err) != codes.PermissionDenied {
		t.Errorf("Write with an unknown lower election ID: %v, want PERMISSION_DENIED", err)
	}
	if err := fwdWrite(cl, "", 4, 1); status.Code(err) != codes.PermissionDenied {
		t.Errorf("Write with a higher election ID and no stream: %v, want PERMISSION_DENIED", err)
	}
	if err := fwdWrite(cl, "", 3, 1); err != nil {
		t.Errorf("Write with the primary's election ID while its stream is open: %v", err)
	}
	// The primary's stream closes: the backup hears there is no primary
	// and is not promoted (the primary is the highest election ID ever
	// seen, P4Runtime §"Client Arbitration Update"); the departed
	// primary's election ID writes nothing either.
	cancel()
	for {
		r, err := backup.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if codes.Code(r.GetArbitration().GetStatus().GetCode()) == codes.NotFound {
			break
		}
	}
	if err := fwdWrite(cl, "", 3, 2); status.Code(err) != codes.PermissionDenied {
		t.Errorf("Write with the departed primary's election ID and no stream: %v, want PERMISSION_DENIED", err)
	}
	if err := setPipe(cl, "", 3); status.Code(err) != codes.PermissionDenied {
		t.Errorf("SetForwardingPipelineConfig with the departed primary's election ID: %v, want PERMISSION_DENIED", err)
	}
	if err := fwdWrite(cl, "", 2, 3); status.Code(err) != codes.PermissionDenied {
		t.Errorf("the backup was promoted when the primary left: Write %v, want PERMISSION_DENIED", err)
	}
	// The backup takes over by reaching the highest election ID seen.
	if err := backup.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: 7, ElectionId: &p4v1.Uint128{Low: 3}}}}); err != nil {
		t.Fatal(err)
	}
	if r, err := backup.Recv(); err != nil || codes.Code(r.GetArbitration().GetStatus().GetCode()) != codes.OK {
		t.Fatalf("backup re-arbitrating with the highest election ID: %v %v, want OK", r, err)
	}
	if err := fwdWrite(cl, "", 3, 3); err != nil {
		t.Errorf("the new primary cannot write: %v", err)
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
	if _, _, c := arbitrate(t, addr, "", 3); c != codes.AlreadyExists {
		t.Errorf("lower election ID: arbitration %v, want ALREADY_EXISTS (backup)", c)
	}
	if err := fwdWrite(rawClient(t, addr), "", 3, 1); status.Code(err) != codes.PermissionDenied {
		t.Errorf("backup Write: %v, want PERMISSION_DENIED", err)
	}
}
