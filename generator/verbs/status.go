package verbs

import (
	"fmt"

	"github.com/netlumina/lumina/generator"
)

// ibv_wc_status values (libibverbs verbs.h; a verbs-build test checks them
// against the header).
const (
	wcSuccess         = 0
	wcLocLenErr       = 1
	wcLocQPOpErr      = 2
	wcLocEECOpErr     = 3
	wcLocProtErr      = 4
	wcWRFlushErr      = 5
	wcMWBindErr       = 6
	wcBadRespErr      = 7
	wcLocAccessErr    = 8
	wcRemInvReqErr    = 9
	wcRemAccessErr    = 10
	wcRemOpErr        = 11
	wcRetryExcErr     = 12
	wcRNRRetryExcErr  = 13
	wcLocRDDViolErr   = 14
	wcRemInvRdReqErr  = 15
	wcRemAbortErr     = 16
	wcInvEECNErr      = 17
	wcInvEECStateErr  = 18
	wcFatalErr        = 19
	wcRespTimeoutErr  = 20
	wcGeneralErr      = 21
	wcTMErr           = 22
	wcTMRndvIncomplte = 23
)

var wcStatusNames = [...]string{"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR", "WR_FLUSH_ERR",
	"MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR",
	"RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR", "INV_EEC_STATE_ERR",
	"FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR", "TM_ERR", "TM_RNDV_INCOMPLETE"}

// StatusName returns the ibv_wc_status name of a raw status, without the
// IBV_WC_ prefix.
func StatusName(raw uint32) string {
	if int(raw) < len(wcStatusNames) {
		return wcStatusNames[raw]
	}
	return fmt.Sprintf("ibv_wc_status(%d)", raw)
}

// MapStatus maps an ibv_wc_status to the generator's Status. The nine
// statuses the generator names map to themselves (exact is true); the
// others to the nearest class (exact is false):
//
//	LOC_QP_OP, LOC_EEC_OP, MW_BIND, LOC_ACCESS, LOC_RDD_VIOL,
//	INV_EECN, INV_EEC_STATE, FATAL, GENERAL, TM_*      → LOC_PROT_ERR
//	REM_INV_RD_REQ                                     → REM_INV_REQ_ERR
//	BAD_RESP, REM_ABORT                                → REM_OP_ERR
//	RESP_TIMEOUT                                       → RETRY_EXC_ERR
func MapStatus(raw uint32) (s generator.Status, exact bool) {
	switch raw {
	case wcSuccess:
		return generator.StatusSuccess, true
	case wcLocLenErr:
		return generator.StatusLocLenErr, true
	case wcLocProtErr:
		return generator.StatusLocProtErr, true
	case wcWRFlushErr:
		return generator.StatusWRFlushErr, true
	case wcRemInvReqErr:
		return generator.StatusRemInvReqErr, true
	case wcRemAccessErr:
		return generator.StatusRemAccessErr, true
	case wcRemOpErr:
		return generator.StatusRemOpErr, true
	case wcRetryExcErr:
		return generator.StatusRetryExcErr, true
	case wcRNRRetryExcErr:
		return generator.StatusRNRRetryExcErr, true
	case wcRemInvRdReqErr:
		return generator.StatusRemInvReqErr, false
	case wcBadRespErr, wcRemAbortErr:
		return generator.StatusRemOpErr, false
	case wcRespTimeoutErr:
		return generator.StatusRetryExcErr, false
	}
	return generator.StatusLocProtErr, false
}

// ibv_wc_opcode values used here.
const (
	wcOpSend         = 0
	wcOpRDMAWrite    = 1
	wcOpRDMARead     = 2
	wcOpRecv         = 1 << 7
	wcOpRecvRDMAImm  = wcOpRecv + 1
	wcFlagWithImm    = 1 << 1 // IBV_WC_WITH_IMM
	wrOpRDMAWrite    = 0      // IBV_WR_RDMA_WRITE
	wrOpRDMAWriteImm = 1
	wrOpSend         = 2
	wrOpSendImm      = 3
	wrOpRDMARead     = 4
)

// wrOpcode maps a generator opcode to ibv_wr_opcode and the completion
// kind it produces.
func wrOpcode(op generator.WROpcode) (ibv int, comp generator.CompletionOp, ok bool) {
	switch op {
	case generator.WRWrite:
		return wrOpRDMAWrite, generator.CompWrite, true
	case generator.WRWriteImm:
		return wrOpRDMAWriteImm, generator.CompWrite, true
	case generator.WRSend:
		return wrOpSend, generator.CompSend, true
	case generator.WRSendImm:
		return wrOpSendImm, generator.CompSend, true
	case generator.WRRead:
		return wrOpRDMARead, generator.CompRead, true
	}
	return 0, 0, false
}

// rawWC is a polled work completion (struct lv_wc in lumina_verbs.h).
type rawWC struct {
	WRID      uint64
	Status    uint32
	Opcode    uint32
	VendorErr uint32
	ByteLen   uint32
	Imm       uint32 // host byte order
	QPN       uint32
	Flags     uint32
}

// completionOf builds the generator's Completion from a polled one and
// the work request it completes. Error completions carry only wr_id,
// status and qp_num (libibverbs): the kind comes from the posted WR.
func completionOf(w rawWC, p pending, known bool) generator.Completion {
	st, _ := MapStatus(w.Status)
	c := generator.Completion{QPN: w.QPN, WRID: w.WRID, Status: st}
	if known {
		c.WRID = p.userID
		c.Op = p.comp
	}
	if w.Status != wcSuccess {
		return c
	}
	switch w.Opcode {
	case wcOpRecv:
		c.Op = generator.CompRecv
	case wcOpRecvRDMAImm:
		c.Op = generator.CompRecvWithImm
	}
	if c.Op == generator.CompRecv || c.Op == generator.CompRecvWithImm {
		c.ByteLen = int(w.ByteLen)
	} else {
		c.ByteLen = p.length
	}
	if w.Flags&wcFlagWithImm != 0 {
		c.Imm, c.HasImm = w.Imm, true
	}
	return c
}
