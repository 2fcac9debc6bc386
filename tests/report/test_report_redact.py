"""The redactor on its own: what it replaces, what it leaves, stable placeholders."""
import pytest

from ranktrace.report.redact import Redactor, redact_document


def red(text, hosts=()):
    doc, r = redact_document({"t": text}, hosts=hosts)
    return doc["t"], r


@pytest.mark.parametrize("line, secret", [
    ("HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"),
    ("password=hunter2hunter2", "hunter2hunter2"),
    ('{"db_password": "S3cr3tPassw0rd"}', "S3cr3tPassw0rd"),
    ("Authorization: Bearer abcDEF123.ghiJKL456-mno", "abcDEF123.ghiJKL456-mno"),
    ("curl -H 'authorization: token ghp_0123456789abcdefghijABCDEFGHIJ012345'",
     "ghp_0123456789abcdefghijABCDEFGHIJ012345"),
    ("python train.py --api-key sk-live-0123456789abcdefghijklmn", "sk-live-0123456789abcdefghijklmn"),
    ("git clone https://bot:glpat-AbCdEf0123456789xyzw@git.example.com/x.git", "glpat-AbCdEf0123456789xyzw"),
    ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0",
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0"),
])
def test_secrets_are_replaced(line, secret):
    out, r = red(line)
    assert secret not in out
    assert "secret-1" in out
    assert r.maps["secret"]


@pytest.mark.parametrize("line", [
    "tokenizer=gpt2 max_tokens=4096",
    "torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9)",
    "NCCL version 2.18.1+cuda12.1",
    "c10d::allreduce_ timed out after 600000 ms",
    "PWD=/opt/job",
    "[rank3]:[E1108 10:52:31.5 ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout",
])
def test_ordinary_text_is_left_alone(line):
    out, _ = red(line)
    assert out == line


def test_hosts_ips_users_paths():
    text = ("ssh jdoe@login-3.hpc.acme-corp.com; USER=jdoe; File \"/home/jdoe/proj/train.py\", line 3; "
            "/Users/alice.smith/x.py; MASTER_ADDR=10.20.30.40 ib0:fe80::1c2d:3eff:fe4f:5a6b%ib0 "
            "gpu-node-17:4242:4300 [0] NCCL INFO; nodes gpu-node-[17-18]; UserId=jdoe(1000); 127.0.0.1")
    out, r = red(text, hosts=["gpu-node-17", "gpu-node-18"])
    for s in ("jdoe", "login-3", "acme-corp", "alice.smith", "10.20.30.40", "fe80::1c2d", "gpu-node-17",
              "gpu-node-[17-18]"):
        assert s not in out, (s, out)
    assert "127.0.0.1" in out  # loopback says nothing about the site
    assert "/home/user-1/proj/train.py" in out
    assert "host-1:4242:4300" in out


def test_placeholders_are_stable_across_the_document():
    doc = {"verdict": {"host": "gpu-node-18", "summary": "rank 3 on gpu-node-18 died"},
           "evidence": [{"file": "logs/gpu-node-18.log", "text": "gpu-node-18 at 10.0.0.7 and 10.0.0.7 again"}],
           "other": ["gpu-node-17 and gpu-node-18", "10.0.0.8 then 10.0.0.7"]}
    out, r = redact_document(doc, hosts=["gpu-node-17", "gpu-node-18"])
    ph = out["verdict"]["host"]
    assert ph.startswith("host-")
    assert out["verdict"]["summary"] == f"rank 3 on {ph} died"
    assert out["evidence"][0]["file"] == f"logs/{ph}.log"
    assert out["evidence"][0]["text"] == f"{ph} at ip-1 and ip-1 again"
    assert out["other"][1] == "ip-2 then ip-1"
    # the same input gives the same placeholders
    out2, _ = redact_document(doc, hosts=["gpu-node-18", "gpu-node-17"])
    assert out2 == out


def test_fqdn_and_short_name_share_a_placeholder():
    out, _ = red("node7 is node7.cluster.local", hosts=["node7"])
    assert out == "host-1 is host-1"


def test_redactor_is_reusable_for_plain_strings():
    r = Redactor(hosts=["n1"])
    assert r.text("n1 and n10") == "host-1 and n10"
