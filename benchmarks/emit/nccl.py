"""NCCL's debug lines (NCCL_DEBUG=INFO/WARN): 'host:pid:tid [cudaDev] NCCL INFO msg' and, for WARN, the
source location before 'NCCL WARN' (src/include/debug.h, src/debug.cc).

Texts (NVIDIA/nccl, master 2026-06): src/init.cc ('%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d
busId %lx commId 0x%llx - Init COMPLETE', the ncclCommSplit form with 'parent %p childCount %d color %d
key %d - Init COMPLETE', 'comm %p rank %d nranks %d cudaDev %d busId %lx - %s COMPLETE' for Destroy/Abort,
'comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d'); src/transport/net_ib/common.cc
('NET/IB : %s:%d Got non-fatal async event: %s(%d)', ibv_event_type_str: 'port error' = 10, 'port
active' = 9; 'async fatal event: %s'); src/transport/net_ib/p2p.cc ('NET/IB: Got completion from peer %s
with status=%s(%d) opcode=%s(%d) vendor_err=%u ... hca %s'); src/misc/socket.cc; the older net_ib.cc
'NET/IB : Got async event : port error' form is from shared/real_log_shapes 001.
"""

from __future__ import annotations


def prefix(host: str, pid: int, tid: int, dev: int) -> str:
    return f"{host}:{pid}:{tid} [{dev}]"


def bus_hex(bus: int) -> str:
    """NCCL prints busId as %lx of the PCI id (domain<<20 | bus<<12 | device<<4 | function)."""
    return f"{bus << 12:x}"


def version(host, pid, dev, ver="2.21.5", cuda="12.4") -> str:
    return f"{prefix(host, pid, pid, dev)} NCCL INFO NCCL version {ver}+cuda{cuda}"


def init_complete(host, pid, tid, dev, comm, rank, nranks, nvml, bus, comm_id) -> str:
    return (f"{prefix(host, pid, tid, dev)} NCCL INFO ncclCommInitRank comm 0x{comm:x} rank {rank} nranks {nranks} "
            f"cudaDev {dev} nvmlDev {nvml} busId {bus_hex(bus)} commId 0x{comm_id:016x} - Init COMPLETE")


def init_topology(host, pid, tid, dev, comm, rank, nranks, nnodes, local_ranks, local_rank) -> str:
    return (f"{prefix(host, pid, tid, dev)} NCCL INFO comm 0x{comm:x} rank {rank} nRanks {nranks} nNodes {nnodes} "
            f"localRanks {local_ranks} localRank {local_rank} MNNVL 0")


def split_complete(host, pid, tid, dev, comm, rank, nranks, nvml, bus, parent, child, color, key) -> str:
    return (f"{prefix(host, pid, tid, dev)} NCCL INFO ncclCommSplit comm 0x{comm:x} rank {rank} nranks {nranks} "
            f"cudaDev {dev} nvmlDev {nvml} busId {bus_hex(bus)} parent 0x{parent:x} childCount {child} "
            f"color {color} key {key} - Init COMPLETE")


def destroy_complete(host, pid, tid, dev, comm, rank, nranks, bus, what="Destroy") -> str:
    return (f"{prefix(host, pid, tid, dev)} NCCL INFO comm 0x{comm:x} rank {rank} nranks {nranks} cudaDev {dev} "
            f"busId {bus_hex(bus)} - {what} COMPLETE")


def ib_using(host, pid, tid, dev, nhca, ifname, ip) -> str:
    """The IB devices and the out-of-band address a process uses (net_ib/init.cc 'NET/IB : Using%s %s; OOB
    %s:%s', the form of NCCL 2.18-2.21: no rail/plane ids): ties the node's IP to its name."""
    devs = "".join(f" [{i}]mlx5_{i}:1/IB" for i in range(nhca))
    return f"{prefix(host, pid, tid, dev)} NCCL INFO NET/IB : Using{devs} [RO]; OOB {ifname}:{ip}<0>"


def channel(host, pid, tid, dev, chan, rank, nxt) -> str:
    return f"{prefix(host, pid, tid, dev)} NCCL INFO Channel {chan:02d}/0 : {rank} -> {nxt} via P2P/IPC/read"


def ib_async(host, pid, tid, dev, hca, port, event, code) -> str:
    """IBV async events NCCL reports without failing: 'port error'(10), 'port active'(9), ..."""
    return (f"{prefix(host, pid, tid, dev)} transport/net_ib/common.cc:179 NCCL WARN NET/IB : {hca}:{port} "
            f"Got non-fatal async event: {event}({code})")


def ib_async_old(host, pid, tid, dev) -> str:
    return f"{prefix(host, pid, tid, dev)} transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error"


def ib_completion_error(host, pid, tid, dev, peer_ip, peer_port, local_ip, hca) -> str:
    """A work request that exhausted its retries: the link (or the peer's link) is gone."""
    return (f"{prefix(host, pid, tid, dev)} transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer "
            f"{peer_ip}<{peer_port}> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  "
            f"localGid ::ffff:{local_ip} remoteGids::ffff:{peer_ip} hca {hca}")


def net_error_chain(host, pid, tid, dev, where="transport/net.cc:1320") -> str:
    return f"{prefix(host, pid, tid, dev)} NCCL INFO {where} -> 6"


def socket_reset(host, pid, tid, dev, peer, port) -> str:
    return (f"{prefix(host, pid, tid, dev)} misc/socket.cc:573 NCCL WARN socketProgressOpt: Call to recv from "
            f"{peer}<{port}> failed : Connection reset by peer")


def socket_closed(host, pid, tid, dev, peer, port) -> str:
    return (f"{prefix(host, pid, tid, dev)} misc/socket.cc:58 NCCL WARN socketProgress: Connection closed by "
            f"remote peer {peer}<{port}>")


def plugin_missing(host, pid, tid, dev) -> str:
    return f"{prefix(host, pid, tid, dev)} NCCL WARN NET/Plugin: Could not find: libnccl-net.so."


def proxy_closed(host, pid, tid, dev, local_rank) -> str:
    return f"{prefix(host, pid, tid, dev)} NCCL INFO [Service thread] Connection closed by localRank {local_rank}"


def cuda_failure(host, pid, tid, dev, what) -> str:
    return f"{prefix(host, pid, tid, dev)} enqueue.cc:1552 NCCL WARN Cuda failure '{what}'"
