"""Kernel log lines: NVIDIA Xid reports, the OOM killer's report, segfaults.

Sources: the NVIDIA driver's Xid format 'NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, <message>'
(NVIDIA/open-gpu-kernel-modules: the Xid 94 format comment in the error-containment code, 'Contained: SM
(0x1). RST: No, D-RST: No'; the row-remapper messages 'Row Remapper: New row marked for remapping, reset
gpu to activate.' and 'Row Remapper Error: (0x%016llx) - All reserved rows for bank are remapped'); Xid 79
'GPU has fallen off the bus.' and 'NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.' and Xid 48's DBE
text from real reports (parsers/formats/kernel_dmesg.toml samples, shared/real_log_shapes 091, 095).
torvalds/linux mm/oom_kill.c: '%s invoked oom-killer: gfp_mask=%#x(%pGg), order=%d, oom_score_adj=%hd',
'oom-kill:constraint=%s,nodemask=%*pbl,cpuset=..,mems_allowed=..,oom_memcg=..,task_memcg=..,task=%s,
pid=%d,uid=%d', '%s: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB,
shmem-rss:%lukB, UID:%u pgtables:%lukB oom_score_adj:%hd' (%s = 'Out of memory' or 'Memory cgroup out of
memory'), 'oom_reaper: reaped process %d (%s), now anon-rss:%lukB, file-rss:%lukB, shmem-rss:%lukB';
arch/x86/mm/fault.c show_signal_msg: '%s[%d]: segfault at %lx ip %px sp %px error %lx in %s[%lx+%lx]'.
"""

from __future__ import annotations


def pci(bus: int, domain: int = 0) -> str:
    return f"{domain:04x}:{bus:02x}:00"


def xid(bus: int, code: int, pid: int | None, name: str | None, msg: str) -> str:
    who = f"pid={pid}, name={name}, " if pid is not None else "pid='<unknown>', name=<unknown>, "
    return f"NVRM: Xid (PCI:{pci(bus)}): {code}, {who}{msg}"


XID_TEXT = {
    79: "GPU has fallen off the bus.",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition {p}, "
        "subpartition 0.",
    94: "Contained: SM (0x1). RST: No, D-RST: No",
    63: "Row Remapper: New row marked for remapping, reset gpu to activate.",
    64: "Row Remapper Error: (0x{addr:016x}) - All reserved rows for bank are remapped",
}

# What the owning process sees (the CUDA runtime error string, as PyTorch prints it)
CUDA_ERROR = {79: "unspecified launch failure", 48: "uncorrectable ECC error encountered",
              94: "uncorrectable ECC error encountered", 64: "uncorrectable ECC error encountered"}


def xid_report(bus: int, code: int, pid: int | None, name: str | None, partition: int = 6,
               addr: int = 0x2eebc4100) -> list[str]:
    """The kernel lines of one Xid event (79 also prints the GPU-level line)."""
    msg = XID_TEXT[code].format(p=partition, addr=addr)
    out = [xid(bus, code, pid, name, msg)]
    if code == 79:
        out.append(f"NVRM: GPU {pci(bus)}.0: GPU has fallen off the bus.")
    return out


def oom_report(comm: str, pid: int, uid: int, memcg: str | None, total_vm_kb: int, rss_kb: int,
               invoker: str | None = None, task_memcg: str | None = None) -> list[str]:
    """The OOM killer's report (the Call Trace and Mem-Info dump between the first and the summary lines are
    left out: many collections drop them too)."""
    who = invoker or comm
    constraint = "CONSTRAINT_MEMCG" if memcg else "CONSTRAINT_NONE"
    cg = (f"oom_memcg={memcg},task_memcg={task_memcg or memcg}," if memcg else "")
    head = "Memory cgroup out of memory" if memcg else "Out of memory"
    return [f"{who} invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
            f"oom-kill:constraint={constraint},nodemask=(null),cpuset=/,mems_allowed=0-1,{cg}task={comm},pid={pid},"
            f"uid={uid}",
            f"{head}: Killed process {pid} ({comm}) total-vm:{total_vm_kb}kB, anon-rss:{rss_kb}kB, file-rss:81234kB, "
            f"shmem-rss:2048kB, UID:{uid} pgtables:{rss_kb // 2000}kB oom_score_adj:0",
            f"oom_reaper: reaped process {pid} ({comm}), now anon-rss:0kB, file-rss:0kB, shmem-rss:2048kB"]


def segfault(comm: str, pid: int, addr: int, ip: int, sp: int, lib: str, base: int, size: int) -> str:
    return f"{comm}[{pid}]: segfault at {addr:x} ip {ip:016x} sp {sp:016x} error 4 in {lib}[{base:x}+{size:x}]"
