//! The layout of every verbs struct and constant this crate mirrors, as seen by Rust ([`rust_layout`]) and as a
//! C program that prints the same facts from `<infiniband/verbs.h>` ([`c_probe_source`]).
//!
//! Both lists come from one table below, so a field added to [`super::ffi`] without a line here is simply not
//! checked, and a line here names the same field in both languages. `tests/ib_layout.rs` compiles the probe with
//! `cc` and compares the two outputs line by line.

use super::ffi;

macro_rules! layout_table {
    (
        structs { $( $kw:ident $ty:ident { $( $($field:ident).+ ),* $(,)? } )* }
        consts { $( $konst:ident ),* $(,)? }
    ) => {
        /// `(key, value)` for every size (`sizeof T`), alignment (`alignof T`), field offset (`offsetof T.f`)
        /// and constant (`const NAME`) of the table, computed by the Rust compiler.
        pub fn rust_layout() -> Vec<(String, u64)> {
            let mut out = Vec::new();
            $(
                out.push((format!("sizeof {}", stringify!($ty)), std::mem::size_of::<ffi::$ty>() as u64));
                out.push((format!("alignof {}", stringify!($ty)), std::mem::align_of::<ffi::$ty>() as u64));
                $(
                    out.push((
                        format!("offsetof {}.{}", stringify!($ty), [$(stringify!($field)),+].join(".")),
                        std::mem::offset_of!(ffi::$ty, $($field).+) as u64,
                    ));
                )*
            )*
            $( out.push((format!("const {}", stringify!($konst)), ffi::$konst as u64)); )*
            out
        }

        /// A C program printing the same `(key, value)` lines as [`rust_layout`] (`key value`, one per line),
        /// from the installed `<infiniband/verbs.h>`.
        pub fn c_probe_source() -> String {
            let mut s = String::from(
                "#include <stddef.h>\n#include <stdio.h>\n#include <infiniband/verbs.h>\n\
                 #define P(k, v) printf(\"%s %llu\\n\", k, (unsigned long long)(v))\nint main(void) {\n",
            );
            $(
                let c_type = format!("{} {}", stringify!($kw), stringify!($ty));
                s.push_str(&format!("  P(\"sizeof {0}\", sizeof({1}));\n", stringify!($ty), c_type));
                s.push_str(&format!("  P(\"alignof {0}\", _Alignof({1}));\n", stringify!($ty), c_type));
                $(
                    let path = [$(stringify!($field)),+].join(".");
                    s.push_str(&format!("  P(\"offsetof {0}.{1}\", offsetof({2}, {1}));\n", stringify!($ty), path, c_type));
                )*
            )*
            $( s.push_str(&format!("  P(\"const {0}\", (unsigned long long)(unsigned)({0}));\n", stringify!($konst))); )*
            s.push_str("  return 0;\n}\n");
            s
        }
    };
}

layout_table! {
    structs {
        union ibv_gid { raw, global.subnet_prefix, global.interface_id }
        struct ibv_port_attr {
            state, max_mtu, active_mtu, gid_tbl_len, port_cap_flags, max_msg_sz, bad_pkey_cntr, qkey_viol_cntr,
            pkey_tbl_len, lid, sm_lid, lmc, max_vl_num, sm_sl, subnet_timeout, init_type_reply, active_width,
            active_speed, phys_state, link_layer, flags, port_cap_flags2,
        }
        struct ibv_context_ops {
            _compat_query_device, _compat_query_port, _compat_alloc_pd, _compat_dealloc_pd, _compat_reg_mr,
            _compat_rereg_mr, _compat_dereg_mr, alloc_mw, bind_mw, dealloc_mw, _compat_create_cq, poll_cq,
            req_notify_cq, _compat_cq_event, _compat_resize_cq, _compat_destroy_cq, _compat_create_srq,
            _compat_modify_srq, _compat_query_srq, _compat_destroy_srq, post_srq_recv, _compat_create_qp,
            _compat_query_qp, _compat_modify_qp, _compat_destroy_qp, post_send, post_recv, _compat_create_ah,
            _compat_destroy_ah, _compat_attach_mcast, _compat_detach_mcast, _compat_async_event,
        }
        struct ibv_context { device, ops, ops.poll_cq, ops.post_send, cmd_fd, async_fd, num_comp_vectors, mutex, abi_compat }
        struct ibv_pd { context, handle }
        struct ibv_mr { context, pd, addr, length, handle, lkey, rkey }
        struct ibv_cq {
            context, channel, cq_context, handle, cqe, mutex, cond, comp_events_completed, async_events_completed,
        }
        struct ibv_qp {
            context, qp_context, pd, send_cq, recv_cq, srq, handle, qp_num, state, qp_type, mutex, cond,
            events_completed,
        }
        struct ibv_qp_cap { max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data }
        struct ibv_qp_init_attr { qp_context, send_cq, recv_cq, srq, cap, qp_type, sq_sig_all }
        struct ibv_global_route { dgid, flow_label, sgid_index, hop_limit, traffic_class }
        struct ibv_ah_attr { grh, dlid, sl, src_path_bits, static_rate, is_global, port_num }
        struct ibv_qp_attr {
            qp_state, cur_qp_state, path_mtu, path_mig_state, qkey, rq_psn, sq_psn, dest_qp_num, qp_access_flags,
            cap, ah_attr, ah_attr.grh.dgid, ah_attr.dlid, ah_attr.is_global, ah_attr.port_num, alt_ah_attr,
            pkey_index, alt_pkey_index, en_sqd_async_notify, sq_draining, max_rd_atomic, max_dest_rd_atomic,
            min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout, rate_limit,
        }
        struct ibv_sge { addr, length, lkey }
        struct ibv_mw_bind_info { mr, addr, length, mw_access_flags }
        struct ibv_send_wr {
            wr_id, next, sg_list, num_sge, opcode, send_flags, imm_data, wr, wr.rdma.remote_addr, wr.rdma.rkey,
            wr.atomic.remote_addr, wr.atomic.compare_add, wr.atomic.swap, wr.atomic.rkey, wr.ud.ah,
            wr.ud.remote_qpn, wr.ud.remote_qkey, qp_type, bind_mw, bind_mw.mw, bind_mw.rkey, bind_mw.bind_info,
        }
        struct ibv_wc {
            wr_id, status, opcode, vendor_err, byte_len, imm_data, qp_num, src_qp, wc_flags, pkey_index, slid, sl,
            dlid_path_bits,
        }
    }
    consts {
        IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_ERR, IBV_QPT_RC,
        IBV_MTU_256, IBV_MTU_512, IBV_MTU_1024, IBV_MTU_2048, IBV_MTU_4096,
        IBV_PORT_DOWN, IBV_PORT_INIT, IBV_PORT_ARMED, IBV_PORT_ACTIVE, IBV_PORT_ACTIVE_DEFER,
        IBV_LINK_LAYER_UNSPECIFIED, IBV_LINK_LAYER_INFINIBAND, IBV_LINK_LAYER_ETHERNET,
        IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_SEND_FENCE, IBV_SEND_SIGNALED, IBV_SEND_INLINE,
        IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_READ,
        IBV_QP_STATE, IBV_QP_ACCESS_FLAGS, IBV_QP_PKEY_INDEX, IBV_QP_PORT, IBV_QP_AV, IBV_QP_PATH_MTU,
        IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY, IBV_QP_RQ_PSN, IBV_QP_MAX_QP_RD_ATOMIC,
        IBV_QP_MIN_RNR_TIMER, IBV_QP_SQ_PSN, IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_DEST_QPN,
        IBV_WC_SUCCESS, IBV_WC_WR_FLUSH_ERR, IBV_WC_REM_ACCESS_ERR, IBV_WC_RETRY_EXC_ERR, IBV_WC_GENERAL_ERR,
    }
}
