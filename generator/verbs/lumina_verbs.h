// lumina_verbs.h: the C side of generator/verbs. libibverbs implements
// ibv_post_send, ibv_post_recv and ibv_poll_cq as static inline functions
// and ibv_reg_mr and ibv_query_port as macros, which cgo cannot call; these
// wrappers also build the attribute structs so Go passes plain integers.
#ifndef LUMINA_VERBS_H
#define LUMINA_VERBS_H

#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>

// lv_wc is the part of struct ibv_wc the generator uses, with a fixed
// layout (imm_data already in host byte order).
struct lv_wc {
	uint64_t wr_id;
	uint32_t status, opcode, vendor_err, byte_len, imm_data, qp_num, wc_flags, pad;
};

#define LV_MAX_POLL 32

static inline int lv_poll_cq(struct ibv_cq *cq, int n, struct lv_wc *out) {
	struct ibv_wc wc[LV_MAX_POLL];
	if (n > LV_MAX_POLL)
		n = LV_MAX_POLL;
	int k = ibv_poll_cq(cq, n, wc);
	for (int i = 0; i < k; i++) {
		out[i].wr_id = wc[i].wr_id;
		out[i].status = wc[i].status;
		out[i].opcode = wc[i].opcode;
		out[i].vendor_err = wc[i].vendor_err;
		out[i].byte_len = wc[i].byte_len;
		out[i].imm_data = be32toh(wc[i].imm_data);
		out[i].qp_num = wc[i].qp_num;
		out[i].wc_flags = wc[i].wc_flags;
		out[i].pad = 0;
	}
	return k;
}

// lv_post_send posts one signaled WR with one SGE (none if len is 0).
// imm is in host byte order.
static inline int lv_post_send(struct ibv_qp *qp, uint64_t wr_id, int opcode, uint64_t laddr, uint32_t len,
                               uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t imm) {
	struct ibv_sge sge = {.addr = laddr, .length = len, .lkey = lkey};
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	wr.opcode = (enum ibv_wr_opcode)opcode;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

static inline int lv_post_recv(struct ibv_qp *qp, uint64_t wr_id, uint64_t laddr, uint32_t len, uint32_t lkey) {
	struct ibv_sge sge = {.addr = laddr, .length = len, .lkey = lkey};
	struct ibv_recv_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	return ibv_post_recv(qp, &wr, &bad);
}

// lv_reg_mr registers with the access flags Go computed (mrAccess).
static inline struct ibv_mr *lv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, unsigned int access) {
	return ibv_reg_mr(pd, addr, len, (int)access);
}

// lv_advise_mr calls ibv_advise_mr (a static inline function);
// EOPNOTSUPP if the provider has no advise_mr.
static inline int lv_advise_mr(struct ibv_pd *pd, uint32_t advice, uint32_t flags, struct ibv_sge *sg, uint32_t n) {
	return ibv_advise_mr(pd, (enum ibv_advise_mr_advice)advice, flags, sg, n);
}

// lv_query_odp reads ibv_device_attr_ex.odp_caps (ibv_query_device_ex, a
// static inline function; providers without it report no ODP).
static inline int lv_query_odp(struct ibv_context *ctx, uint64_t *general, uint32_t *rc) {
	struct ibv_device_attr_ex a;
	memset(&a, 0, sizeof a);
	int ret = ibv_query_device_ex(ctx, NULL, &a);
	if (ret)
		return ret;
	*general = a.odp_caps.general_caps;
	*rc = a.odp_caps.per_transport_caps.rc_odp_caps;
	return 0;
}

struct lv_caps {
	int max_qp_wr, max_cqe, max_qp_rd_atom, max_qp_init_rd_atom;
	int active_mtu, state, link_layer;
};

static inline int lv_query(struct ibv_context *ctx, uint8_t port, struct lv_caps *out) {
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	int rc = ibv_query_device(ctx, &da);
	if (rc)
		return rc;
	rc = ibv_query_port(ctx, port, &pa);
	if (rc)
		return rc;
	out->max_qp_wr = da.max_qp_wr;
	out->max_cqe = da.max_cqe;
	out->max_qp_rd_atom = da.max_qp_rd_atom;
	out->max_qp_init_rd_atom = da.max_qp_init_rd_atom;
	out->active_mtu = pa.active_mtu;
	out->state = pa.state;
	out->link_layer = pa.link_layer;
	return 0;
}

static inline struct ibv_qp *lv_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, int max_send_wr, int max_recv_wr) {
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof a);
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = 1;
	a.cap.max_send_wr = max_send_wr;
	a.cap.max_recv_wr = max_recv_wr;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	return ibv_create_qp(pd, &a);
}

// lv_modify_init: RESET → INIT with pkey index 0 and remote READ/WRITE.
static inline int lv_modify_init(struct ibv_qp *qp, uint8_t port) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

// lv_modify_rtr: INIT → RTR with a global (GRH) address: RoCE v2 needs the
// peer's GID; the kernel resolves its MAC from the neighbour table. mask is
// Go's rtrMask (with IBV_QP_MIN_RNR_TIMER).
static inline int lv_modify_rtr(struct ibv_qp *qp, int mtu, uint32_t dest_qpn, uint32_t rq_psn, int max_dest_rd_atomic,
                                int min_rnr_timer, const uint8_t *dgid, int sgid_index, int hop_limit,
                                int traffic_class, uint8_t port, int mask) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = max_dest_rd_atomic;
	a.min_rnr_timer = min_rnr_timer;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
	a.ah_attr.grh.sgid_index = sgid_index;
	a.ah_attr.grh.hop_limit = hop_limit;
	a.ah_attr.grh.traffic_class = traffic_class;
	a.ah_attr.grh.flow_label = 0;
	a.ah_attr.sl = 0;
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = port;
	return ibv_modify_qp(qp, &a, mask);
}

// lv_modify_rts: RTR → RTS. mask is Go's rtsMask (with IBV_QP_RNR_RETRY).
static inline int lv_modify_rts(struct ibv_qp *qp, int timeout, int retry_cnt, int rnr_retry, uint32_t sq_psn,
                                int max_rd_atomic, int mask) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = rnr_retry;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = max_rd_atomic;
	return ibv_modify_qp(qp, &a, mask);
}

// lv_open opens the device called name; NULL with errno ENODEV if absent.
static inline struct ibv_context *lv_open(const char *name) {
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	struct ibv_context *ctx = NULL;
	errno = ENODEV;
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name) == 0) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	}
	int saved = errno;
	ibv_free_device_list(list);
	errno = saved;
	return ctx;
}

#endif
