"""Emitters of real log texts, shared by the benchmark generators (gen_noisy.py, gen_longrun.py).

Each function returns one line (or a few) exactly as the emitting software prints it; the source of
every text is named next to it (repository and file, or a real capture in sample_logs/ /
shared/real_log_shapes). The functions take the time as the emitting host's clock shows it (the
generators add the per-host skew before calling), so they never read a clock or the time zone:
times are naive datetimes meaning UTC.

    timefmt   time layouts (Python logging, glog, c10 glog, dmesg -T, Slurm, klog, CRI, ...)
    nccl      NCCL INFO/WARN lines (communicator init/split/destroy, IB async events, transport errors)
    torch     ProcessGroupNCCL watchdog, c10d store, the torchrun elastic agent, tracebacks
    kernel    NVIDIA Xid reports, the OOM killer's report, segfaults
    slurm     slurmctld / slurmd / slurmstepd / srun lines
    k8s       kubelet journal lines, kubectl describe / get events, the CRI pod-log envelope
    progress  training progress and checkpoint save / resume lines of the common frameworks
"""
