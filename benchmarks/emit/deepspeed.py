"""The DeepSpeed launcher: over pdsh (HELD-OUT layout of gen_longrun.py) and without ssh under srun (tuning).

Sources: deepspeedai/DeepSpeed master: deepspeed/utils/logging.py (the logger format '[%(asctime)s]
[%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s] %(message)s'); deepspeed/launcher/runner.py:630
('cmd = %s', the pdsh command line on the launching host); deepspeed/launcher/launch.py: 162 'WORLD INFO
DICT: %s', 168 'nnodes=%d, num_local_procs=%d, node_rank=%d', 180 'dist_world_size=%d', 184 'Setting
CUDA_VISIBLE_DEVICES=%s', 272 'process %d spawned with command: %s', and sigkill_handler 335 'Killing
subprocess %d' / 341 '%s exits with return code = %d' (cmd is the last spawned command, whichever process
failed); pdsh's 'pdsh@%s: %s: ssh exited with exit code %d' (chaos/pdsh src/modules/sshcmd.c).
"""

from __future__ import annotations

import base64
import datetime as dt
import json

from . import timefmt


def log(t: dt.datetime, level: str, src: str, msg: str) -> str:
    return f"[{timefmt.py(t)}] [{level}] [{src}] {msg}"


def runner_cmd(t, hosts, gpus, master, port, script) -> str:
    info = world_info_b64(hosts, gpus)
    return log(t, "INFO", "runner.py:630:main",
               f"cmd = pdsh -S -f 1024 -w {','.join(hosts)} export PYTHONPATH=/workspace;  cd /workspace; "
               f"/usr/bin/python -u -m deepspeed.launcher.launch --world_info={info} --node_rank=%n "
               f"--master_addr={master} --master_port={port} {script} --deepspeed --deepspeed_config ds_config.json")


def launch_header(t, hosts, gpus, node_rank) -> list[str]:
    info = "{" + ", ".join(f"'{h}': {list(range(gpus))}" for h in hosts) + "}"
    return [log(t, "INFO", "launch.py:162:main", f"WORLD INFO DICT: {info}"),
            log(t, "INFO", "launch.py:168:main", f"nnodes={len(hosts)}, num_local_procs={gpus}, node_rank={node_rank}"),
            log(t, "INFO", "launch.py:180:main", f"dist_world_size={len(hosts) * gpus}"),
            log(t, "INFO", "launch.py:184:main", f"Setting CUDA_VISIBLE_DEVICES={','.join(map(str, range(gpus)))}")]


def cmd_of(script: str, local_rank: int) -> str:
    return (f"['/usr/bin/python', '-u', '{script}', '--local_rank={local_rank}', '--deepspeed', '--deepspeed_config', "
            "'ds_config.json']")


def spawned(t, pid, script, local_rank) -> str:
    return log(t, "INFO", "launch.py:272:main", f"process {pid} spawned with command: {cmd_of(script, local_rank)}")


def killing(t, pid) -> str:
    return log(t, "INFO", "launch.py:335:sigkill_handler", f"Killing subprocess {pid}")


def exits_with(t, script, last_local_rank, code) -> str:
    return log(t, "ERROR", "launch.py:341:sigkill_handler",
               f"{cmd_of(script, last_local_rank)} exits with return code = {code}")


def success(t, pid) -> str:
    return log(t, "INFO", "launch.py:367:main", f"Process {pid} exits successfully.")


def pdsh_ssh_exit(local_host, host, code) -> str:
    return f"pdsh@{local_host}: {host}: ssh exited with exit code {code}"


# deepspeed --no_ssh --node_rank=N (runner.py:538-576: no pdsh; the runner starts launch.py on its own node)
def runner_cmd_local(t, info_b64, master, port, node_rank, script, rank_log: str | None) -> str:
    each = f" --enable_each_rank_log={rank_log}" if rank_log else ""
    return log(t, "INFO", "runner.py:630:main",
               f"cmd = /usr/bin/python -u -m deepspeed.launcher.launch --world_info={info_b64} "
               f"--master_addr={master} --master_port={port} --node_rank={node_rank}{each} --log_level=info "
               f"{script} --deepspeed --deepspeed_config ds_config.json")


def world_info_b64(hosts, gpus) -> str:
    return base64.urlsafe_b64encode(json.dumps({h: list(range(gpus)) for h in hosts}).encode()).decode()


def global_rank_mapping(t, hosts, gpus) -> str:
    """launch.py:179, a defaultdict's repr."""
    m = ", ".join(f"'{h}': {list(range(i * gpus, (i + 1) * gpus))}" for i, h in enumerate(hosts))
    return log(t, "INFO", "launch.py:179:main", f"global_rank_mapping=defaultdict(<class 'list'>, {{{m}}})")


def main_received(t, sig: str) -> str:
    """sigkill_handler when launch.py itself got SIGINT/SIGTERM and no worker had failed (launch.py:344)."""
    return log(t, "INFO", "launch.py:344:sigkill_handler", f"Main process received {sig}, exiting")
