package dumper

import "testing"

func TestAFPacketIface(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-huge", "--vdev=net_af_packet0,iface=lrx,framecnt=8192"}, "lrx"},
		{[]string{"--vdev", "net_af_packet1,qpairs=2,iface=eth3"}, "eth3"},
		{[]string{"--vdev=net_null0", "--vdev=net_af_packet0,iface=d0"}, "d0"},
		{[]string{"--vdev=net_null0"}, ""},
		{[]string{"--vdev=net_af_packet0"}, ""},
		{[]string{"--vdev"}, ""},
	} {
		if got := afPacketIface(c.args); got != c.want {
			t.Errorf("afPacketIface(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

func TestIfaceRxPackets(t *testing.T) {
	if _, ok := ifaceRxPackets("lo"); !ok {
		t.Error("ifaceRxPackets(lo): not readable")
	}
	for _, bad := range []string{"", "../lo", "no-such-interface-x"} {
		if v, ok := ifaceRxPackets(bad); ok {
			t.Errorf("ifaceRxPackets(%q) = %d, true; want false", bad, v)
		}
	}
}
