"""A real etcd process on free loopback ports with a temporary data dir."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import grpc

from strata.dev import find_etcd, free_port
from strata.proto.etcd.etcdserverpb import rpc_pb2, rpc_pb2_grpc


class EtcdProcess:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.client_port = free_port()
        self.peer_port = free_port()
        self.address = f"127.0.0.1:{self.client_port}"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        peer = f"http://127.0.0.1:{self.peer_port}"
        log = open(self.data_dir.parent / "etcd.log", "ab")  # noqa: SIM115 - kept for the process
        self._process = subprocess.Popen(
            [
                str(find_etcd()),
                "--name=test",
                f"--data-dir={self.data_dir}",
                f"--listen-client-urls=http://{self.address}",
                f"--advertise-client-urls=http://{self.address}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=test={peer}",
                "--listen-metrics-urls=",
                "--log-level=error",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with grpc.insecure_channel(self.address) as channel:
                    rpc_pb2_grpc.MaintenanceStub(channel).Status(rpc_pb2.StatusRequest(), timeout=1)
                return
            except grpc.RpcError:
                time.sleep(0.1)
        raise RuntimeError("etcd did not start")

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(10)
