"""The DeepSpeed launcher over pdsh (HELD-OUT layout of gen_longrun.py).

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
    info = base64.urlsafe_b64encode(json.dumps({h: list(range(gpus)) for h in hosts}).encode()).decode()
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
