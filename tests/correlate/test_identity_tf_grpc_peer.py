"""TensorFlow's distributed runtime names the task at the other end of a failed call: 'Additional GRPC error information
from remote target /job:ps/replica:0/task:0:' then ':' and gRPC core's debug error string, whose description is 'Error
received from peer ipv4:A:port' (grpc call.cc); grpc_status 14 (UNAVAILABLE: 'Socket closed') says that peer went away.
parsers/formats/tensorflow_grpc.toml: the peer is the detail line's host; the first detail is the origin (a relay task's
error quotes it after)."""

from __future__ import annotations

from .fixtures import diagnose_files


def _detail(ip: str, message: str, status: int) -> str:
    return (':{"created":"@1671093382.410577218","description":"Error received from peer ipv4:' + ip + ':2222",'
            '"file":"external/com_github_grpc_grpc/src/core/lib/surface/call.cc","file_line":1056,'
            f'"grpc_message":"{message}","grpc_status":{status}}}')


def test_the_peer_that_closed_the_socket_is_named(tmp_path, monkeypatch, catalog):
    text = "\n".join([
        "ERROR:tensorflow:/job:worker/task:1 encountered the following error when processing closure: UnavailableError():"
        "Graph execution error:", "", "Socket closed",
        "Additional GRPC error information from remote target /job:ps/replica:0/task:1/device:CPU:0:",
        _detail("10.40.3.17", "Socket closed", 14),
        "Additional GRPC error information from remote target /job:worker/replica:0/task:1:",
        _detail("10.40.9.5", "Socket closed", 14)]) + "\n"
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"chief.log": text})["verdict"]
    assert v["kind"] == "network_error", v
    assert v["host"] == "10.40.3.17", v


def test_another_status_is_no_network_failure(tmp_path, monkeypatch, catalog):
    text = ("tensorflow.python.framework.errors_impl.InternalError: Failed copying input tensor: Unable to parse tensor "
            "proto\nAdditional GRPC error information from remote target /job:worker/replica:0/task:0:\n"
            + _detail("10.40.3.17", "Unable to parse tensor proto", 3) + "\n")
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"chief.log": text})["verdict"]
    assert v["kind"] != "network_error", v
