"""Issue 28's shapes, each as its emitter writes it (the source named beside each case), end to end:
the value comes out AND the verdict names it (kind and culprit), and a verdict that cannot name the
culprit says so and stays at or below the cap of queries/data/verdict_naming.toml.

Each case is a small bundle (relative path -> text) ingested into a store of its own (the test's own
directory names never reach the path hints) and diagnosed."""

from __future__ import annotations

import pytest

from ranktrace.correlate.naming import rules

from .fixtures import diagnose_files

WATCHDOG = ("[rank{r}]:[E304 10:20:30.{r}00000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
            "ran for 600012 milliseconds before timing out.\n")


def _nccl_ranks(hosts=("gpu-a01", "gpu-a02")) -> dict[str, str]:
    """Two nodes of two ranks each; every rank's NCCL init line names its host, pid and GPU (busId
    3b000 / 86000: PCI 0000:3b:00 / 0000:86:00), then every rank times out on the same collective."""
    out = {}
    for n, h in enumerate(hosts):
        lines = []
        for lr, bus in ((0, "3b000"), (1, "86000")):
            r, pid = 2 * n + lr, 4100 + 100 * n + lr
            lines.append(f"[rank{r}]:{h}:{pid}:{pid + 50} [{lr}] NCCL INFO comm 0x55d{r} rank {r} nranks 4 "
                         f"cudaDev {lr} busId {bus} commId 0x9f3c - Init COMPLETE\n")
        lines += [WATCHDOG.format(r=2 * n + lr) for lr in (0, 1)]
        out[f"{h}/train.log"] = "".join(lines)
    return out


DMESG_T = "[Mon Mar  4 10:10:29 2024] "


def _ds_line(src: str, msg: str, level: str = "INFO") -> str:
    """deepspeed/utils/logging.py's launcher format: '[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s] '."""
    return f"[2024-03-04 10:00:03,201] [{level}] [{src}] {msg}\n"


def _ds_pdsh_launch() -> str:
    """Each node's launch.py under pdsh ('host: ' on every line): world info, its node rank, the rank mapping."""
    out = ""
    for i, h in enumerate(("gpu-a01", "gpu-a02")):
        out += (f"{h}: " + _ds_line("launch.py:146:main", "WORLD INFO DICT: {'gpu-a01': [0, 1, 2, 3], 'gpu-a02': [0, 1, 2, 3]}") +
                f"{h}: " + _ds_line("launch.py:152:main", f"nnodes=2, num_local_procs=4, node_rank={i}") +
                f"{h}: " + _ds_line("launch.py:163:main", "global_rank_mapping=defaultdict(<class 'list'>, "
                                    "{'gpu-a01': [0, 1, 2, 3], 'gpu-a02': [4, 5, 6, 7]})") +
                f"{h}: " + _ds_line("launch.py:164:main", "dist_world_size=8"))
    return out

CASES = {
    # ---- Kubernetes
    # kubectl printers (pkg/printers/internalversion printNode: NAME STATUS ROLES AGE VERSION)
    "kubectl_get_nodes_notready": (
        {"nodes.txt": "$ kubectl get nodes\n"
                      "NAME          STATUS     ROLES           AGE   VERSION\n"
                      "cp-0          Ready      control-plane   30d   v1.28.4\n"
                      "gpu-node-1    Ready      <none>          12d   v1.28.4\n"
                      "gpu-node-2    NotReady   <none>          12d   v1.28.4\n"},
        {"kind": "node_failure", "host": "gpu-node-2"}),
    # kubectl describe.go describeNode ('Name:', then the Conditions table: Type Status LastHeartbeatTime
    # LastTransitionTime Reason Message; node lifecycle controller's 'Kubelet stopped posting node status.')
    "kubectl_describe_node_ready_unknown": (
        {"describe.txt": "Name:               gpu-node-2\nRoles:              <none>\n"
                         "Taints:             node.kubernetes.io/unreachable:NoExecute\nConditions:\n"
                         "  Type             Status    LastHeartbeatTime                 LastTransitionTime"
                         "                Reason              Message\n"
                         "  ----             ------    -----------------                 ------------------"
                         "                ------              -------\n"
                         "  Ready            Unknown   Mon, 04 Mar 2024 10:04:10 +0000   Mon, 04 Mar 2024 10:05:00 +0000"
                         "   NodeStatusUnknown   Kubelet stopped posting node status.\n"},
        {"kind": "node_failure", "host": "gpu-node-2"}),
    # kubectl describe.go describePod ('Node:\t%s' name/hostIP; describeContainerState 'Last State: Terminated',
    # 'Reason: OOMKilled', 'Exit Code: 137')
    "kubectl_describe_last_state_oomkilled": (
        {"describe.txt": "Name:             trainer-worker-1\nNamespace:        ml\nPriority:         0\n"
                         "Node:             gpu-node-4/10.0.2.14\n"
                         "Start Time:       Mon, 04 Mar 2024 10:00:00 +0000\nStatus:           Running\n"
                         "Containers:\n  pytorch:\n    Image:          nvcr.io/nvidia/pytorch:24.02-py3\n"
                         "    State:          Running\n      Started:      Mon, 04 Mar 2024 10:20:03 +0000\n"
                         "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n"
                         "      Started:      Mon, 04 Mar 2024 10:00:05 +0000\n"
                         "      Finished:     Mon, 04 Mar 2024 10:19:40 +0000\n"
                         "    Ready:          True\n    Restart Count:  1\n"},
        {"kind": "oom", "pod": "trainer-worker-1", "host": "gpu-node-4"}),
    # the command pasted above a cut dump (kubectl 'describe (-f FILENAME | TYPE [NAME_PREFIX | -l label] | TYPE/NAME)',
    # behind a shell prompt): the dump is about that pod
    "kubectl_describe_command_above_cut_dump": (
        {"describe.txt": "[root@master-1 ~]# kubectl describe pod -n ml trainer-worker-7\n...\n"
                         "Status:         Failed\nReason:         Evicted\nMessage:        The node was low on "
                         "resource: memory. \n...\n"},
        {"kind": "oom", "pod": "trainer-worker-7"}),
    # describePod 'Status: Failed', 'Reason: Evicted', 'Message:' (kubelet eviction/helpers.go nodeLowMessageFmt)
    "kubectl_describe_reason_evicted": (
        {"describe.txt": "Name:           trainer-worker-2\nNamespace:      ml\nNode:           gpu-node-5/10.0.2.15\n"
                         "Start Time:     Mon, 04 Mar 2024 10:00:00 +0000\nStatus:         Failed\n"
                         "Reason:         Evicted\nMessage:        The node was low on resource: memory. Threshold "
                         "quantity: 100Mi, available: 91204Ki. \n"},
        {"kind": "oom", "pod": "trainer-worker-2", "host": "gpu-node-5"}),
    # kubectl get events (LAST SEEN TYPE REASON OBJECT MESSAGE), kubelet's Evicted event
    "kubectl_events_warning_evicted": (
        {"events.txt": "LAST SEEN   TYPE      REASON      OBJECT                 MESSAGE\n"
                       "12m         Normal    Started     pod/trainer-worker-0   Started container pytorch\n"
                       "2m          Warning   Evicted     pod/trainer-worker-3   The node was low on resource: memory. "
                       "Threshold quantity: 100Mi, available: 91204Ki.\n"},
        {"kind": ("oom", "cancelled"), "pod": "trainer-worker-3"}),
    # kubeflow/training-operator pod.go ReconcilePods (logrus text: time=, level=, msg=, sorted fields)
    "kubeflow_operator_pod_exit": (
        {"operator.log": 'time="2024-03-04T10:19:41Z" level=info msg="Pod: ml.trainer-worker-1 exited with code 137" '
                         'job=ml.trainer replica-type=worker uid=7c1d2e3f\n'
                         'time="2024-03-04T10:19:41Z" level=info msg="Need to restart the pod: ml.trainer-worker-1" '
                         'job=ml.trainer replica-type=worker uid=7c1d2e3f\n'},
        {"kind": "killed", "pod": "trainer-worker-1"}),
    # ---- kernel, driver
    # NVRM Xid (PCI:dddd:bb:dd) -> NCCL's busId of that host (src/misc/utils.cc int64ToBusId) -> rank
    "xid_pci_id_to_rank_via_nccl_busid": (
        {**_nccl_ranks(), "gpu-a02/dmesg.txt": DMESG_T + "NVRM: Xid (PCI:0000:86:00): 79, pid=0, GPU has fallen off "
                                                         "the bus.\n"},
        {"kind": "gpu_fault", "rank": 3, "host": "gpu-a02", "gpu": "0000:86:00"}),
    # the same join when the node's syslog writes its host name in capitals and NCCL (gethostname) in lower case:
    # host names are case-insensitive (DNS), one machine in either spelling
    "xid_pci_id_to_rank_host_in_other_case": (
        {**_nccl_ranks(), "kern.log": "Mar  4 10:10:29 GPU-A02 kernel: NVRM: Xid (PCI:0000:86:00): 79, pid=0, GPU has "
                                      "fallen off the bus.\n"},
        {"kind": "gpu_fault", "rank": 3, "gpu": "0000:86:00"}),
    # drivers/pci/pcie/err.c via dev_printk ('nvidia 0000:3b:00.0: AER: ...')
    "aer_pci_id_to_rank_via_nccl_busid": (
        {**_nccl_ranks(), "gpu-a01/dmesg.txt": DMESG_T + "nvidia 0000:3b:00.0: AER: can't recover (no "
                                                         "error_detected callback)\n"},
        {"kind": "gpu_fault", "rank": 0, "host": "gpu-a01"}),
    # mm/oom_kill.c __oom_kill_process 'Out of memory: Killed process %d (%s)' -> the pid NCCL named -> rank
    "oom_killer_pid_to_rank": (
        {**_nccl_ranks(), "gpu-a02/dmesg.txt": DMESG_T + "Out of memory: Killed process 4201 (python) "
                                                         "total-vm:87033376kB, anon-rss:61234500kB, file-rss:0kB\n"},
        {"kind": "oom", "rank": 3, "host": "gpu-a02", "pid": 4201}),
    # slurm task/cgroup 'Detected %u oom-kill event(s) in %ps' + srun 'srun: error: %s: task %s: Out Of Memory',
    # torchrun under srun (no --label): srun's task is an agent, the agent names the SIGKILLed local rank
    "slurm_oom_kill_torchrun_under_srun": (
        {"slurm-123456.out":
            "E0304 10:19:41.000000 140077 torch/distributed/elastic/multiprocessing/api.py:862] failed "
            "(exitcode: -9) local_rank: 1 (pid: 140102) of binary: /usr/bin/python\n"
            "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=123456.0. Some of your processes may have "
            "been killed by the cgroup out-of-memory handler.\n"
            "srun: error: gpu-b12: task 1: Out Of Memory\n"},
        {"kind": "oom", "host": "gpu-b12", "local_rank": 1, "pid": 140102, "rank": None}),
    # torchrun's '[rank{N}]:' behind a time another program wrote first (envelope ts_rank_prefix)
    "torch_rank_prefix_behind_a_time": (
        {"train.log": "2024-05-01 10:00:00,123 [rank3]: Traceback (most recent call last):\n"
                      "2024-05-01 10:00:00,123 [rank3]:   File \"train.py\", line 40, in main\n"
                      "2024-05-01 10:00:00,124 [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to "
                      "allocate 2.00 GiB.\n"
                      "2024-05-01 10:10:05,000 [rank0]: " + WATCHDOG.format(r=0).split("]:", 1)[1]},
        {"kind": "gpu_oom", "rank": 3}),
    # ---- launchers
    # Open MPI --tag-output '[jobid,vpid]<stream>:' and help-orterun.txt 'Process name: [[%s,%d],%d]'
    "openmpi_tag_output": (
        {"mpirun.log": "[1,0]<stdout>:step 10 loss 2.3100\n[1,3]<stderr>:Traceback (most recent call last):\n"
                       "[1,3]<stderr>:  File \"train.py\", line 10, in <module>\n[1,3]<stderr>:    main()\n"
                       "[1,3]<stderr>:RuntimeError: CUDA error: an illegal memory access was encountered\n"
                       "  Process name: [[29973,1],3]\n  Exit code:    1\n"},
        {"kind": "cuda_error", "rank": 3}),
    # opal/util/stacktrace.c '[%s:%05d] *** Process received signal ***' + help-orterun.txt 'noticed that process
    # rank %lu with PID %lu on node %s exited on signal %d'
    "openmpi_host_pid_signal": (
        {"mpirun.log": "[gpu-c03:44120] *** Process received signal ***\n"
                       "[gpu-c03:44120] Signal: Segmentation fault (11)\n"
                       "[gpu-c03:44120] *** End of error message ***\n"
                       "mpirun noticed that process rank 5 with PID 44120 on node gpu-c03 exited on signal 11 "
                       "(Segmentation fault).\n"},
        {"kind": "crash", "rank": 5, "host": "gpu-c03", "pid": 44120}),
    # ORTE iof_base_output.c with --timestamp-output: '%s[%s,%s]<%s>:' (ctime, its newline cut)
    "openmpi_timestamp_tag_output": (
        {"mpirun.log": "Fri Sep 25 16:52:55 2020[1,2]<stdout>:step 812 loss 1.0312\n"
                       "Fri Sep 25 16:52:57 2020[1,6]<stderr>:[gpu-c04:51230] *** Process received signal ***\n"
                       "Fri Sep 25 16:52:57 2020[1,6]<stderr>:[gpu-c04:51230] Signal: Bus error (7)\n"
                       "Fri Sep 25 16:52:57 2020[1,6]<stderr>:[gpu-c04:51230] *** End of error message ***\n"},
        {"kind": "crash", "rank": 6, "host": "gpu-c04", "pid": 51230}),
    # torch/multiprocessing/spawn.py ProcessRaisedException: '\n\n-- Process %d terminated with the following error:\n'
    "mp_spawn_process_raised": (
        {"spawn.log": "torch.multiprocessing.spawn.ProcessRaisedException: \n\n"
                      "-- Process 2 terminated with the following error:\nTraceback (most recent call last):\n"
                      "  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py\", line 69, in _wrap\n"
                      "    fn(i, *args)\n"
                      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total "
                      "capacity of 79.15 GiB of which 1.20 GiB is free.\n"},
        {"kind": "gpu_oom", "rank": 2, "local_rank": 2}),
    # spawn.py ProcessExitedException('process %d terminated with signal %s')
    "mp_spawn_process_exited_signal": (
        {"spawn.log": "Traceback (most recent call last):\n"
                      "  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py\", line 145, in join\n"
                      "    raise ProcessExitedException(\n"
                      "torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with signal SIGKILL\n"},
        {"kind": "killed", "rank": 3, "local_rank": 3}),
    # ray worker.py print_worker_logs '({actor} pid={pid}, ip={ip}) '
    "ray_worker_prefix": (
        {"driver.log": "(RayTrainWorker pid=4412, ip=10.0.0.7) [rank3]: torch.OutOfMemoryError: CUDA out of memory. "
                       "Tried to allocate 2.00 GiB.\n"
                       "(RayTrainWorker pid=4410, ip=10.0.0.5) " + WATCHDOG.format(r=1)},
        {"kind": "gpu_oom", "rank": 3, "host": "10.0.0.7", "pid": 4412}),
    # the same prefix with an actor's __repr__ in place of its name (Ray docs, 'Customizing prefixes for Actor
    # logs': '(MyActor(index=2) pid=482120) hello there'): a role and rank, a class with its arguments
    "ray_actor_repr_role_rank_prefix": (
        {"driver.log": "(head, rank=2, pid=4412, ip=10.0.0.7) torch.OutOfMemoryError: CUDA out of memory. "
                       "Tried to allocate 2.00 GiB.\n"
                       "(Trainer(index=1) pid=4410, ip=10.0.0.5) step 812 loss 1.031\n"},
        {"kind": "gpu_oom", "rank": 2, "host": "10.0.0.7", "pid": 4412}),
    "ray_actor_repr_with_arguments_prefix": (
        {"driver.log": "(Trainer(index=0) pid=4410, ip=10.0.0.5) step 812 loss 1.031\n"
                       "(Trainer(index=1) pid=4412, ip=10.0.0.7) torch.OutOfMemoryError: CUDA out of memory. "
                       "Tried to allocate 2.00 GiB.\n"},
        {"kind": "gpu_oom", "host": "10.0.0.7", "pid": 4412}),
    # ray raylet node_manager.cc OOM summary, forwarded to the driver behind '(raylet) ' (spdlog
    # '[%Y-%m-%d %H:%M:%S,%e %L %P %t] ', component, file:line): the node is the raylet's own
    "ray_raylet_oom_summary_node": (
        {"driver.log": "(raylet) [2024-03-04 10:10:29,118 E 5120 5120] (raylet) node_manager.cc:3064: 3 Workers "
                       "(tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons "
                       "at node (ID: 8c5a1410013588601db2a6344fa1e074, IP: 10.0.4.21) over the last time period. To "
                       "see more information about the Workers killed on this node, use `ray logs raylet.out -ip "
                       "10.0.4.21`\n(raylet) \n"},
        {"kind": "oom", "host": "10.0.4.21", "pid": None}),
    # the memory monitor's kill detail in the driver's OutOfMemoryError: the killed worker's pid, its node
    "ray_memory_monitor_kill_detail": (
        {"driver.log": "Memory on the node (IP: 10.0.4.22, ID: 90efe99b630d4b1f6ac1504df6476473) where the task "
                       "(actor ID: 0dab4ab45f6c947201afac6d01000000, name=RayWorkerWrapper.__init__, pid=7310, memory "
                       "used=11.15GB) was running was 12.49GB / 13.15GB (0.950003), which exceeds the memory usage "
                       "threshold of 0.95. Ray killed this worker (ID: 79a553ea91fe46f9) because it was the most "
                       "recently scheduled task\n"},
        {"kind": "oom", "host": "10.0.4.22", "pid": 7310}),
    # nvidia nv.c 'NVRM: The NVIDIA GPU %04x:%02x:%02x.%x\n NVRM: (PCI ID: ...) installed in this system has\n
    # NVRM: fallen off the bus ...' (no Xid line)
    "nvrm_the_nvidia_gpu_fallen_off": (
        {"dmesg.txt": "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
                      "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
                      "               NVRM: fallen off the bus and is not responding to commands.\n"
                      "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"},
        {"kind": "gpu_fault", "gpu": "0000:b3:00"}),
    # accelerate test_utils/testing.py _stream_subprocess tee: print("stderr:", line) on every child line;
    # behind it a worker's traceback and the agent's report of that worker
    "accelerate_tee_stderr_label": (
        {"run.log": "stderr: Traceback (most recent call last):\n"
                    "stderr:   File \"/srv/train.py\", line 88, in <module>\n"
                    "stderr:     loss.backward()\n"
                    "stderr: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a "
                    "total capacity of 79.15 GiB of which 1.20 GiB is free.\n"
                    "stderr: WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 3301 closing "
                    "signal SIGTERM\n"
                    "stderr: ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 3 "
                    "(pid: 3304) of binary: /usr/bin/python\n"},
        {"kind": "gpu_oom", "local_rank": 3, "pid": 3304}),
    # ray python/ray/exceptions.py ActorDiedError: '\tpid: ', '\tip: ' lines then the raylet's exit detail;
    # the driver's exception line is a report about the actor, not a cause of its own
    "ray_actor_died_pid_ip": (
        {"driver.log": "Traceback (most recent call last):\n"
                       "  File \"/srv/main_ppo.py\", line 42, in main\n"
                       "    ray.get(refs)\n"
                       "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
                       "\tclass_name: WorkerDict\n\tactor_id: 5066c201b724a3936948a11201000000\n\tpid: 8768\n"
                       "\tname: WorkerDict_0:3\n\tnamespace: b8860f81\n\tip: 10.0.4.23\n"
                       "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker "
                       "exit detail: Worker unexpectedly exits with a connection error code 2. End of file.\n"},
        {"kind": ("unknown", "killed"), "host": "10.0.4.23", "pid": 8768}),
    "ray_actor_died_k8s_memory_limit": (
        {"driver.log": "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
                       "\tclass_name: TaskRunner\n\tactor_id: 8d1498767d305748d59d87da01000000\n\tpid: 3190\n"
                       "\tnamespace: 1109301e\n\tip: 10.0.4.24\n"
                       "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker "
                       "exit detail: Worker exits unexpectedly. Worker exits with an exit code None. The worker may "
                       "have exceeded K8s pod memory limits.\n"},
        {"kind": "oom", "host": "10.0.4.24", "pid": 3190}),
    # ray src/ray/gcs/gcs_server/gcs_actor_manager.cc OnNodeDead: the actors owned by workers of a dead node die with
    # GenOwnerDiedCause(..., "Owner's node has crashed.", node_ip_address): the node that failed is the owner's
    # (its address in the text), not the actor's own ('ip:' field, another node here)
    "ray_actor_died_owner_node_crashed": (
        {"driver.log": "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
                       "\tclass_name: Runner\n\tactor_id: 28507c63735529c3265367b501000000\n\tpid: 5120\n"
                       "\tnamespace: b9b0f765\n\tip: 10.0.4.31\n"
                       "The actor is dead because its owner has died. Owner Id: 01000000ffffffffffffffffffffffffffffffff"
                       "ffffffffffffffff Owner Ip address: 10.0.4.9 Owner worker exit type: SYSTEM_ERROR Worker exit "
                       "detail: Owner's node has crashed.\n"},
        {"kind": "node_failure", "host": "10.0.4.9"}),
    # glibc elf/dl-tls.c oom(): _dl_fatal_printf("cannot allocate memory for thread-local data: ABORT\n"), the
    # process's own death of memory exhaustion, behind Ray's '(Class pid=N) ' worker prefix
    # (python/ray/_private/worker.py print_worker_logs); the driver's worker-died warning ties the pid to its node
    "glibc_tls_oom_behind_ray_prefix": (
        {"driver.log": "(Rollout pid=7311) step 40 done\n"
                       "2024-05-11 09:41:27,118\tWARNING worker.py:1986 -- A worker died or was killed while executing "
                       "a task by an unexpected system error. To troubleshoot the problem, check the logs for the dead "
                       "worker. RayTask ID: ffff Worker ID: 8e0c Node ID: 5d7e Worker IP address: 10.0.5.12 Worker "
                       "port: 40117 Worker PID: 7311 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker "
                       "unexpectedly exits with a connection error code 2. End of file.\n"
                       "(Rollout pid=7311) cannot allocate memory for thread-local data: ABORT\n"},
        {"kind": "oom", "pid": 7311, "host": "10.0.5.12"}),
    # the same glibc line behind torchrun's '[rankN]:' tee prefix (torch/distributed/elastic/multiprocessing)
    "glibc_tls_oom_behind_rank_prefix": (
        {"train.log": "[rank1]:step 900 loss 2.01\n[rank5]:step 900 loss 2.03\n"
                      "[rank5]:cannot allocate memory for thread-local data: ABORT\n"},
        {"kind": "oom", "rank": 5}),
    # ---- the scheduler's acts (slurmstepd req.c '*** %s ON %s CANCELLED AT %s DUE TO ... ***', srun's own)
    "slurm_time_limit": (
        {"slurm.out": "[rank0]:step 4810 loss 1.0312\nslurmstepd: error: *** JOB 713158 ON gpu-b07 CANCELLED AT "
                      "2024-03-04T10:00:00 DUE TO TIME LIMIT ***\n"},
        {"kind": "time_limit", "host": "gpu-b07", "rank": None}),
    "srun_time_limit_no_node": (
        {"slurm.out": "[rank0]:step 4810 loss 1.0312\nsrun: error: *** STEP 713158.0 CANCELLED AT "
                      "2024-03-04T10:00:00 DUE TO TIME LIMIT ***\n"},
        {"kind": "time_limit", "host": None, "summary": "step 713158.0"}),
    "slurm_scancel_names_the_step": (
        {"slurm.out": "[rank0]:step 4810 loss 1.0312\nslurmstepd: error: *** STEP 713158.0 ON gpu-b07 CANCELLED AT "
                      "2024-03-04T10:00:00 ***\nsrun: error: gpu-b07: tasks 0-7: Terminated\n"},
        {"kind": "cancelled", "host": "gpu-b07", "summary": "step 713158.0"}),
    "slurm_requeue_is_capped": (
        {"slurm.out": "[rank0]:step 4810 loss 1.0312\nslurmstepd: error: *** JOB 713158 ON gpu-b07 CANCELLED AT "
                      "2024-03-04T10:00:00 DUE TO JOB REQUEUE ***\n"},
        {"kind": "cancelled", "host": "gpu-b07", "cap": "requeue"}),
    "slurm_time_limit_host_cut_off": (
        {"slurm.out": "[rank0]:step 4810 loss 1.0312\nslurmstepd: error: *** JOB 713158 ON ... CANCELLED AT "
                      "2024-03-04T10:00:00 DUE TO TIME LIMIT ***\n"},
        {"kind": "time_limit", "host": None, "cap": "cut"}),
    # the reporter of a node failure is a node that survived: the failed one is not in the text
    "slurm_node_failure_names_nobody": (
        {"slurm.out": "[rank0]:step 4810 loss 1.0312\nslurmstepd: error: *** JOB 713158 ON gpu-b07 CANCELLED AT "
                      "2024-03-04T10:00:00 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n"},
        {"kind": "node_failure", "host": None, "cap": "nobody"}),
    # TCPStore.cpp waitForWorkers: the store's server gave up; who did not join is not in the text
    "store_waiting_for_clients_names_nobody": (
        {"rank0.log": "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 "
                      "clients joined.\n"},
        {"kind": "rendezvous_timeout", "cap": "nobody"}),
    # Open MPI's non-zero exit report (help-orterun.txt / help-prun.txt [non-zero-exit]): the process name's vpid
    # is the rank of the first process that exited non-zero
    "openmpi_first_nonzero_process_name": (
        {"mpirun.out": "-" * 74 + "\nmpirun detected that one or more processes exited with non-zero status, thus "
                       "causing\nthe job to be terminated. The first process to do so was:\n\n"
                       "  Process name: [[40112,1],12]\n  Exit code:    3\n" + "-" * 74 + "\n"},
        {"kind": "exception", "rank": 12}),
    # open-gpu-kernel-modules osinit.c RmInitAdapter: NV_DEV_PRINTF 'NVRM: GPU {pci}: RmInitAdapter failed! (...)'
    "nvrm_rminitadapter_failed_gpu": (
        {"dmesg.txt": "[   19.804411] NVRM: GPU 0000:b1:00.0: RmInitAdapter failed! (0x62:0x65:1860)\n"
                      "[   19.804662] NVRM: GPU 0000:b1:00.0: rm_init_adapter failed, device minor number 3\n"},
        {"kind": "gpu_fault", "gpu": "0000:b1:00"}),
    # ---- vLLM's worker monitors (the line is the monitor's; the worker it lost is its subject)
    # vllm/executor/multiproc_worker_utils.py WorkerMonitor.run: 'Worker %s pid %s died, exit code: %s'
    "vllm_v0_worker_monitor_pid_exit_code": (
        {"serve.log": "INFO 05-01 10:00:00 model_runner.py:100] Loading model weights took 10.1 GiB\n"
                      "ERROR 05-01 10:14:07 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 48213 died, "
                      "exit code: -9\n"},
        {"kind": ("killed", "oom"), "pid": 48213}),
    # vllm/v1/executor/multiproc_executor.py: processes named f"VllmWorker-{rank}"; the monitor thread's
    # 'Worker proc %s died unexpectedly, shutting down executor.'
    "vllm_v1_worker_proc_died_names_its_rank": (
        {"serve.log": "INFO 05-01 10:00:00 [core.py:58] Initializing a V1 LLM engine\n"
                      "ERROR 05-01 10:14:07 [multiproc_executor.py:140] Worker proc VllmWorker-3 died unexpectedly, "
                      "shutting down executor.\n"},
        {"kind": "unknown", "rank": 3}),
    # vllm/v1/executor/ray_executor_v2.py RayWorkerMonitor: 'RayWorkerProc rank=%s died unexpectedly, ...' (a list)
    "vllm_ray_executor_v2_one_dead_rank": (
        {"serve.log": "ERROR 05-01 10:14:07 [ray_executor_v2.py:464] RayWorkerProc rank=[5] died unexpectedly, "
                      "shutting down executor.\n"},
        {"kind": "unknown", "rank": 5}),
    # ray src/ray/gcs/gcs_server/gcs_node_manager.cc (a node removed without intent): 'The node with node id: {id}
    # and address: {ip} and node name: {name} has been marked dead because the detector has missed too many
    # heartbeats from it.' ('and ip: {ip}' in older Ray), printed by the driver's worker.py logger: the node is
    # the subject, the driver is elsewhere
    "ray_driver_node_marked_dead_address": (
        {"driver.log": "2024-04-11 16:38:10,102\tINFO worker.py:1724 -- Connecting to existing Ray cluster at "
                       "address: 10.0.3.1:6379...\n"
                       "2024-04-11 16:38:16,464\tWARNING worker.py:2037 -- The node with node id: 9a1e0c and address: "
                       "10.0.3.7 and node name: 10.0.3.7 has been marked dead because the detector has missed too "
                       "many heartbeats from it. This can happen when a \t(1) raylet crashes unexpectedly (OOM, "
                       "preempted node, etc.) \n\t(2) raylet has lagging heartbeats due to slow network or busy "
                       "workload.\n"},
        {"kind": "node_failure", "host": "10.0.3.7"}),
    "ray_driver_node_marked_dead_ip_glued_to_bar": (
        {"driver.log": "Map Progress:  41%|####      | 410/1000 [08:12<11:48,  1.20s/it]2021-09-05 05:42:38,294\t"
                       "WARNING worker.py:1228 -- The node with node id: 0fc149 and ip: 172.31.57.35 has been "
                       "marked dead because the detector has missed too many heartbeats from it. This can happen "
                       "when a raylet crashes unexpectedly or has lagging heartbeats.\n"},
        {"kind": "node_failure", "host": "172.31.57.35"}),
    # ray src/ray/util/event.cc: the GCS's event log, one JSON object a line (RAY_EVENT(ERROR, EL_RAY_NODE_REMOVED)
    # with fields node_id and ip, the same message); host_name is the writer (the head node), not the dead node
    "ray_gcs_event_log_node_removed": (
        {"logs/events/event_GCS.log":
            '{"custom_fields":{"ip":"10.0.3.7","node_id":"9a1e0c"},"event_id":"18207c","host_name":"head-0",'
            '"label":"RAY_NODE_REMOVED","message":"The node with node id: 9a1e0c and address: 10.0.3.7 and node '
            'name: 10.0.3.7 has been marked dead because the detector has missed too many heartbeats from it. This '
            'can happen when a \\t(1) raylet crashes unexpectedly (OOM, etc.) \\\\n\\t(2) raylet has lagging '
            'heartbeats due to slow network or busy workload.","pid":"65","severity":"ERROR","source_type":"GCS",'
            '"timestamp":1750669108}\n'},
        {"kind": "node_failure", "host": "10.0.3.7"}),
    # ---- MPI launchers
    # pmodels/mpich src/pm/hydra/pm/pmiserv/pmiserv_cb.c: the BAD TERMINATION banner; 'PID %d RUNNING AT %s', then
    # 'EXIT CODE: %d' printed only when the process did not exit: the raw status, the signal that ended it
    "mpich_hydra_bad_termination_pid_node": (
        {"mpiexec.out": "\n" + "=" * 83 + "\n=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
                        "=   PID 30417 RUNNING AT gpu-b07\n=   EXIT CODE: 9\n=   CLEANING UP REMAINING PROCESSES\n"
                        "=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES\n" + "=" * 83 + "\n"},
        {"kind": ("killed", "oom"), "pid": 30417, "host": "gpu-b07"}),
    # Intel MPI's Hydra (closed source; the form public reports print, abacus-develop#3259, extrae#101): one banner a
    # process, '=   RANK %d PID %d RUNNING AT %s' then '=   KILLED BY SIGNAL: %d (%s)'
    "intel_mpi_hydra_rank_pid_killed_by_signal": (
        {"mpirun.out": "\n" + "=" * 83 + "\n=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
                       "=   RANK 3 PID 40117 RUNNING AT cn-b12\n=   KILLED BY SIGNAL: 11 (Segmentation fault)\n"
                       + "=" * 83 + "\n"},
        {"kind": "crash", "rank": 3, "pid": 40117, "host": "cn-b12"}),
    # openucx src/uct/ib (dc_verbs.c / ib_mlx5_log.c): 'Send completion with error on qp 0x%x: %s' (the verbs work
    # completion status), behind UCX's '[sec.usec] [host:pid:thread]' prefix and Open MPI's --tag-output tag: the
    # rank that saw its transport fail first is the one to look at
    "ucx_send_completion_error_first_rank": (
        {"mpirun.out": "[1,5]<stdout>:[1700000000.100000] [gpu-c03:5512 :0]       dc_verbs.c:633  UCX  ERROR Send "
                       "completion with error on qp 0x10e55: transport retry counter exceeded syndrome 0x81\n"
                       "[1,2]<stdout>:[1700000044.900000] [gpu-c01:7710 :0]       dc_verbs.c:633  UCX  ERROR Send "
                       "completion with error on qp 0xef18: transport retry counter exceeded syndrome 0x81\n"},
        {"kind": "network_error", "rank": 5, "host": "gpu-c03", "pid": 5512}),
    # nccl src/transport/net_ib: 'NET/IB : Got completion from peer %s with error %d, opcode %d, len %d, vendor err
    # %d' (12: IBV_WC_RETRY_EXC_ERR, the transport gave up retrying) and nothing in the text died: the transport
    "nccl_ib_retry_exceeded_nothing_died": (
        {"node7.log": "node7:41001:41190 [3] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
                      "10.0.0.8<53412> with error 12, opcode 0, len 0, vendor err 129 (Send)\n"
                      "node7:41001:41190 [3] NCCL INFO transport/net.cc:1008 -> 6\n"},
        {"kind": "network_error", "host": "node7", "pid": 41001}),
    # the same UCX line after a peer's own crash (its stack trace: Open MPI's opal stacktrace banner): the peer's
    # death explains the retries, the transport is not accused
    "ucx_retry_exceeded_after_a_peer_crashed": (
        {"mpirun.out": "[1,3]<stderr>:[gpu-c02:06120] *** Process received signal ***\n"
                       "[1,3]<stderr>:[gpu-c02:06120] Signal: Segmentation fault (11)\n"
                       "[1,5]<stdout>:[1700000000.100000] [gpu-c03:5512 :0]       dc_verbs.c:633  UCX  ERROR Send "
                       "completion with error on qp 0x10e55: transport retry counter exceeded syndrome 0x81\n"},
        {"kind": ("crash", "unknown")}),
    # slurm src/plugins/task/cgroup (slurmstepd: 'Detected %u oom_kill event in %ps. Some of the step tasks have
    # been OOM Killed.') relayed by a wrapper that prefixes srun's output with its own 'name: tag: '
    "slurmstepd_oom_kill_behind_a_relay_prefix": (
        {"qdo.log": "Stage fitblobs finished: 2025-10-06T04:26:25.586644\n"
                    "qdo-srun.py: srun#64: slurmstepd: error: Detected 1 oom_kill event in StepId=43622791.67. "
                    "Some of the step tasks have been OOM Killed.\n"},
        {"kind": "oom", "cap": "nobody"}),
    # ---- Job wrappers
    # kaldi utils/queue.pl (slurm.pl, ssh.pl): every job log starts "# Running on `hostname`", "# Started at `date`"
    "kaldi_queue_pl_running_on_header": (
        {"log/train.1.log": "# Running on r3n11\n# Started at Fri Mar 11 13:48:01 EST 2022\n"
                            "# python train.py --world-size 4\n\n"
                            "terminate called after throwing an instance of 'c10::Error'\n"
                            "  what():  CUDA error: an illegal memory access was encountered\n"},
        {"kind": ("cuda_error", "crash"), "host": "r3n11"}),
    # kubeflow/mpi-operator updateMPIJobStatus: '%d/%d workers are evicted', the Failed condition (MPIJobEvicted)
    "mpijob_condition_workers_evicted": (
        {"mpijob.yaml": "status:\n  conditions:\n  - lastTransitionTime: \"2024-03-04T10:19:41Z\"\n"
                        "    message: 2/16 workers are evicted\n    reason: MPIJobEvicted\n"
                        "    status: \"True\"\n    type: Failed\n"},
        {"kind": "cancelled"}),
    # ---- DeepSpeed launcher (deepspeed/launcher/launch.py)
    # sigkill_handler: 'Killing subprocess {pid}' for every process it started, then the command of the
    # last one it spawned: with one subprocess, that pid and that command's --local_rank are the failed one's
    "deepspeed_one_subprocess_is_the_failed_one": (
        {"ds.log": _ds_line("launch.py:152:main", "nnodes=1, num_local_procs=1, node_rank=0") +
                   _ds_line("launch.py:428:sigkill_handler", "Killing subprocess 8821") +
                   _ds_line("launch.py:434:sigkill_handler", "['/usr/bin/python3', '-u', 'main.py', '--local_rank=0', "
                            "'--deepspeed'] exits with return code = -9", "ERROR")},
        {"kind": ("killed", "oom"), "local_rank": 0, "pid": 8821}),
    # the same handler's ERROR line cut before ' exits with return code = N' (a paste): it is logged only when a
    # subprocess failed (last_return_code set), so with one subprocess killed the failure is still that one's
    "deepspeed_one_subprocess_report_cut_before_its_code": (
        {"ds.log": _ds_line("launch.py:428:sigkill_handler", "Killing subprocess 2871") +
                   _ds_line("launch.py:434:sigkill_handler", "['/usr/bin/python3', '-u', 'main.py', '--local_rank=0', "
                            "'--data_path', 'Dahoas/rm-static', '--zero_stage', '2', '--deepspeed', '--output_dir', "
                            "'/home/u/", "ERROR")},
        {"kind": ("unknown", "killed", "exception", "crash", "oom"), "local_rank": 0, "pid": 2871}),
    # the same handler with two subprocesses, the first 'Killing subprocess' line glued to a stray print: two
    # processes were killed, so neither the pid nor the printed command's --local_rank is the failed one's
    "deepspeed_two_subprocesses_one_kill_line_glued": (
        {"ds.log": "step 812 done" + _ds_line("launch.py:318:sigkill_handler", "Killing subprocess 7702") +
                   _ds_line("launch.py:318:sigkill_handler", "Killing subprocess 7703") +
                   _ds_line("launch.py:324:sigkill_handler", "['/usr/bin/python3', '-u', 'main.py', '--local_rank=1', "
                            "'--deepspeed'] exits with return code = -11", "ERROR")},
        {"kind": "crash", "local_rank": None, "pid": None}),
    # main: 'process {pid} spawned with command: {cmd}' (pid -> local rank) and 'global_rank_mapping={...}'
    # (node -> global ranks in spawn order; LOCAL_RANK = rank % the node's count): the kernel's OOM kill of a
    # pid on the second node names global rank 5
    "deepspeed_spawned_pid_and_rank_mapping": (
        {"console.log": _ds_pdsh_launch() +
                        "".join(f"gpu-a02: " + _ds_line("launch.py:272:main", f"process {4100 + lr} spawned with "
                                                        f"command: ['/usr/bin/python3', '-u', 'train.py', "
                                                        f"'--local_rank={lr}', '--deepspeed']") for lr in range(4)),
         "gpu-a02/kern.log": "Mar  4 10:10:29 gpu-a02 kernel: Out of memory: Killed process 4101 (python3) "
                             "total-vm:87033376kB, anon-rss:61122336kB, file-rss:0kB, shmem-rss:0kB, UID:1000 "
                             "pgtables:124020kB oom_score_adj:0\n"},
        {"kind": "oom", "pid": 4101, "host": "gpu-a02", "local_rank": 1, "rank": 5}),
    # --enable_each_rank_log DIR: f"{time.strftime('%Y%m%d%H%M%S')}_rank{dist_rank}.log" holds one rank's
    # output; global_rank_mapping says which node ran that rank
    "deepspeed_rank_log_file_and_mapping": (
        {"console.log": _ds_pdsh_launch(),
         "ds_logs/20240304100003_rank6.log": "Traceback (most recent call last):\n"
                                             '  File "/home/u/proj/train.py", line 211, in <module>\n'
                                             "    loss.backward()\n"
                                             "RuntimeError: CUDA error: an illegal memory access was encountered\n"},
        {"kind": "cuda_error", "rank": 6, "host": "gpu-a02"}),
    # ---- PaddlePaddle's launcher (python/paddle/distributed/launch: controllers/controller.py watch() logs
    # 'Container failed !!!\n{container}' then the failed container's log tail; job/container.py Container.__str__
    # 'Container rank {rank} status {status} cmd {entrypoint} code {exit_code} log {errfile}', the rank its index in
    # the pod, job/pod.py): the traceback of the tail names nobody, the container line names its local rank
    "paddle_launch_container_failed_local_rank": (
        {"launch.log": "LAUNCH INFO 2023-03-02 11:05:40,112 Pod failed\n"
                       "LAUNCH ERROR 2023-03-02 11:05:40,113 Container failed !!!\n"
                       "Container rank 2 status failed cmd ['/usr/bin/python3', '-u', 'train.py'] code 1 log "
                       "log/workerlog.2\n"
                       "LAUNCH INFO 2023-03-02 11:05:40,113 ------------------------- ERROR LOG DETAIL "
                       "-------------------------\n"
                       "Traceback (most recent call last):\n"
                       '  File "train.py", line 88, in <module>\n'
                       "    main()\n"
                       "ValueError: label index 91 out of range\n"
                       "LAUNCH INFO 2023-03-02 11:05:43,730 Exit code 1\n"},
        {"kind": "exception", "local_rank": 2}),
    # ---- session 12 (issue 28, helper id12): the source sweep
    # systemd src/shared/logs-show.c print_multiline: a multi-line record's later lines are printed indented to the
    # message column ("%*s", continuation * prefix); the journal's envelope peels that indent (kubectl describe's
    # env pattern claimed them, and the GPU's fault read as a node failure)
    "journalctl_multiline_record_continuation_indented": (
        {"kern.log": "Mar 04 10:10:27 gpu-a02 kernel: nvidia-nvlink: Nvlink Core is being initialized\n"
                     "Mar 04 10:10:29 gpu-a02 kernel: NVRM: The NVIDIA GPU 0000:b3:00.0\n"
                     "                                NVRM: (PCI ID: 10de:20b2) installed in this system has\n"
                     "                                NVRM: fallen off the bus and is not responding to commands.\n"
                     "Mar 04 10:10:30 gpu-a02 kernel: NVRM: GPU at PCI:0000:b3:00: GPU-680c9403-43d1-6cfc-9afd\n"},
        {"kind": "gpu_fault"}),
    # orte errmgr / prrte 'noticed that process rank %d with PID %d on node %s exited on signal': PID 0 is a pid the
    # daemon never learnt (the process died before reporting in), not a pid
    "openmpi_noticed_pid_0_is_no_pid": (
        {"mpirun.log": "mpirun noticed that process rank 3 with PID 0 on node node2 exited on signal 9 (Killed).\n"},
        {"kind": "killed", "rank": 3, "host": "node2", "pid": None}),
    # NVRM 'Xid (PCI:..): 79, pid=0, ...': the driver's own context, no process
    "xid_pid_0_is_no_pid": (
        {"dmesg.txt": "[2231907.588168] NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus.\n"},
        {"kind": "gpu_fault", "gpu": "0000:09:00", "pid": None}),
    # ompi/errhandler/errhandler_predefined.c (help-mpi-errors.txt): '[%s:%d] *** An error occurred in %s',
    # '*** reported by process [%lu,%lu]' (jobid, vpid = rank), then MPI_ERRORS_ARE_FATAL: the process aborts the job
    "openmpi_errors_are_fatal_reported_by_process": (
        {"mpirun.log": "[gpu-c01:04867] *** An error occurred in MPI_Bcast\n"
                       "[gpu-c01:04867] *** reported by process [4056547329,16]\n"
                       "[gpu-c01:04867] *** on communicator MPI_COMM_WORLD\n"
                       "[gpu-c01:04867] *** MPI_ERR_TRUNCATE: message truncated\n"
                       "[gpu-c01:04867] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,\n"
                       "[gpu-c01:04867] ***    and potentially your MPI job)\n"},
        {"kind": "exception", "rank": 16, "host": "gpu-c01", "pid": 4867}),
    # help-mpi-api.txt [mpi-abort]: 'MPI_ABORT was invoked on rank %d in communicator %s\nwith errorcode %d.'
    "openmpi_mpi_abort_invoked_on_rank": (
        {"mpirun.log": "Error in routine c_bands (1):\n"
                       "--------------------------------------------------------------------------\n"
                       "MPI_ABORT was invoked on rank 5 in communicator MPI_COMM_WORLD\nwith errorcode 1.\n\n"
                       "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n"
                       "--------------------------------------------------------------------------\n"},
        {"kind": "exception", "rank": 5}),
    # help-orterun.txt [proc-exit-no-sync]: '%s has exited due to process rank %lu with PID %lu on\nnode %s exiting
    # improperly. There are three reasons this could occur:'
    "openmpi_exited_due_to_process_rank_improperly": (
        {"mpirun.log": "--------------------------------------------------------------------------\n"
                       "mpirun has exited due to process rank 2 with PID 10259 on\n"
                       "node cn-f01 exiting improperly. There are three reasons this could occur:\n\n"
                       "1. this process did not call \"init\" before exiting, but others in\n"},
        {"kind": "exception", "rank": 2, "pid": 10259}),
    # MPICH mpid_abort.c MPID_Abort: 'Abort(%d) on node %d (rank %d in comm %d): %s' ('on node': the world rank)
    "mpich_abort_on_node_is_the_world_rank": (
        {"job.err": "Abort(1) on node 3 (rank 3 in comm 0): Fatal error in PMPI_Allreduce: Other MPI error, error "
                    "stack:\nPMPI_Allreduce(450)..........: MPI_Allreduce(sbuf=0x7ffd, rbuf=0x7ffe, count=1, "
                    "MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) failed\n"},
        {"kind": "exception", "rank": 3}),

    # horovod runner/common/util/safe_shell_exec.py forward_stream '{time}[{rank}]<{prefix}>:{line}' (gloo_run.py: index =
    # slot_info.rank), and gloo_run's 'Process {idx} exit with status code {ec}.'
    "horovod_gloo_rank_tag_and_process_exit": (
        {"horovodrun.log": "[0]<stdout>:step 10 loss 2.31\n[3]<stderr>:Traceback (most recent call last):\n"
                           "[3]<stderr>:  File \"train.py\", line 10, in <module>\n[3]<stderr>:    loss.backward()\n"
                           "[3]<stderr>:RuntimeError: CUDA error: an illegal memory access was encountered\n"
                           "Process 3 exit with status code 1.\n"},
        {"kind": "cuda_error", "rank": 3}),
    "horovod_process_exit_alone": (
        {"horovodrun.log": "Sat Sep  5 06:02:11 2020[1]<stdout>:step 812 loss 1.0312\n"
                           "Process 2 exit with status code 137.\n"},
        {"kind": ("killed", "oom"), "rank": 2}),
    # determined harness/determined/launch/wrap_rank.py forward_stream: f'[rank={rank}] ' before every worker line
    "determined_wrap_rank_prefix": (
        {"trial.log": "[rank=0] step 10 loss 2.31\n[rank=5] Traceback (most recent call last):\n"
                      "[rank=5]   File \"train.py\", line 10, in <module>\n[rank=5]     loss.backward()\n"
                      "[rank=5] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"},
        {"kind": "gpu_oom", "rank": 5}),
    # kubelet eviction_manager.go: InfoS('Eviction manager: pods evicted, waiting for pod to be cleaned up', 'pods',
    # klog.KObjSlice(evictedPods)): pods=["ns/name"]
    "kubelet_eviction_pods_evicted_kobjslice": (
        {"kubelet.log": "I0304 10:19:41.000000    2211 eviction_manager.go:366] \"Eviction manager: attempting to "
                        "reclaim\" resourceName=\"memory\"\n"
                        "I0304 10:19:41.100000    2211 eviction_manager.go:613] \"Eviction manager: pods evicted, "
                        "waiting for pod to be cleaned up\" pods=[\"ml/trainer-worker-1\"]\n"},
        {"kind": "oom", "pod": "trainer-worker-1"}),
    # slurm src/api/step_launch.c: error("Task launch for %ps failed on node %s: %m")
    "srun_task_launch_failed_on_node": (
        {"slurm-123.out": "srun: error: Task launch for StepId=123.0 failed on node gpu-b12: Socket timed out on "
                          "send/recv operation\nsrun: error: Application launch failed: Socket timed out on send/recv "
                          "operation\n"},
        {"kind": "node_failure", "host": "gpu-b12"}),

    # nccl src/proxy.cc: WARN("[Proxy Service %d] Failed to execute operation %s from rank %d, retcode %d", tpRank, ..):
    # the rank of the process whose proxy thread failed (the same host:pid as the Cuda failure before it)
    "nccl_proxy_service_rank_names_the_process": (
        {"train.log": "gpu-a02:4412:4490 [1] NCCL INFO cudaDriverVersion 12020\n"
                      "gpu-a02:4412:4501 [1] include/alloc.h:124 NCCL WARN Cuda failure 'out of memory'\n"
                      "gpu-a02:4412:4501 [1] proxy.cc:1504 NCCL WARN [Proxy Service 5] Failed to execute operation "
                      "Connect from rank 5, retcode 1\n"},
        {"kind": "gpu_oom", "rank": 5, "host": "gpu-a02", "pid": 4412}),

    # ompi/runtime/ompi_mpi_abort.c: '[%s:%05d] Local abort %s completed successfully, but am not able to aggregate
    # error messages, and not able to guarantee that all other processes were killed!' then _exit: the process
    # aborted (read as a clean end before)
    "openmpi_local_abort_before_mpi_init_is_no_clean_end": (
        {"mpirun.log": "*** An error occurred in MPI_Init_thread\n*** on a NULL communicator\n"
                       "*** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,\n"
                       "***    and potentially your MPI job)\n"
                       "[gpu-d07:52310] Local abort before MPI_INIT completed completed successfully, but am not able "
                       "to aggregate error messages, and not able to guarantee that all other processes were killed!\n"},
        {"kind": "exception", "host": "gpu-d07", "pid": 52310}),
    # ray python/ray/exceptions.py ActorDiedError fields: 'ip: 0.0.0.0' is the any-address, no machine
    "ray_actor_died_ip_any_address_names_no_host": (
        {"driver.log": "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
                       "\tclass_name: CriticModelRayActor\n\tactor_id: 9a41c7e2b0dd9155208f189803000000\n"
                       "\tpid: 402117\n\tnamespace: 81c3a0f4\n\tip: 0.0.0.0\n"
                       "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker "
                       "exit detail: Worker unexpectedly exits with a connection error code 2. End of file.\n"},
        {"kind": ("killed", "oom", "crash", "unknown"), "pid": 402117, "host": None}),

}


def _verdict(tmp_path, monkeypatch, catalog, files: dict[str, str]) -> dict:
    return diagnose_files(tmp_path, monkeypatch, catalog, files)["verdict"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_verdict_names_whom_the_text_names(name, tmp_path, monkeypatch, catalog):
    files, want = CASES[name]
    v = _verdict(tmp_path, monkeypatch, catalog, files)
    kinds = want["kind"] if isinstance(want["kind"], tuple) else (want["kind"],)
    assert v["kind"] in kinds, v
    for col in ("rank", "local_rank", "host", "pod", "pid"):
        if col in want:
            assert v[col] == want[col], (col, v)
    if "gpu" in want:
        assert (v["gpu"] or "").lower().startswith(want["gpu"]), v
    if "summary" in want:
        assert want["summary"] in v["summary"], v
    r = rules()
    cap = {"nobody": r.nobody_cap, "cut": r.cut_cap, "requeue": r.requeue_cap}.get(want.get("cap"))
    if cap is not None:
        assert v["confidence"] <= cap, v
    named = any(v[c] is not None for c in r.nobody_cols)
    if not named and v["kind"] not in r.exempt and v["kind"] not in r.scheduler_kinds:
        # a local rank alone is no culprit the engineer can find (which node?), so the cap holds; the
        # summary still says the local rank it has (naming.review)
        assert v["confidence"] <= r.nobody_cap, v
        assert ("nobody named" if v["local_rank"] is None else f"local rank {v['local_rank']}") in v["summary"], v
