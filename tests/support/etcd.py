"""A real etcd process on free loopback ports with a temporary data dir."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import grpc

from strata.dev import etcd_command, find_etcd, free_port
from strata.proto.etcd.etcdserverpb import rpc_pb2, rpc_pb2_grpc


class EtcdProcess:
    """etcd on free ports; with tls_dir (ca.crt, server.crt/key from
    tests.support.tls) it serves https and demands client certificates."""

    def __init__(self, data_dir: Path, tls_dir: Path | None = None) -> None:
        self.data_dir = data_dir
        self.client_port = free_port()
        self.peer_port = free_port()
        self.address = f"127.0.0.1:{self.client_port}"
        self.tls_dir = tls_dir
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        scheme = "https" if self.tls_dir else "http"
        tls_flags: tuple[str, ...] = ()
        if self.tls_dir is not None:
            tls_flags = (
                f"--cert-file={self.tls_dir / 'server.crt'}",
                f"--key-file={self.tls_dir / 'server.key'}",
                f"--trusted-ca-file={self.tls_dir / 'ca.crt'}",
                "--client-cert-auth",
            )
        log = open(self.data_dir.parent / "etcd.log", "ab")  # noqa: SIM115 - kept for the process
        self._process = subprocess.Popen(
            etcd_command(
                find_etcd(),
                data_dir=self.data_dir,
                client_url=f"{scheme}://{self.address}",
                peer_port=self.peer_port,
                name="test",
                extra=tls_flags,
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with self._channel() as channel:
                    rpc_pb2_grpc.MaintenanceStub(channel).Status(rpc_pb2.StatusRequest(), timeout=1)
                return
            except grpc.RpcError:
                time.sleep(0.1)
        raise RuntimeError("etcd did not start")

    def _channel(self) -> grpc.Channel:
        if self.tls_dir is None:
            return grpc.insecure_channel(self.address)
        credentials = grpc.ssl_channel_credentials(
            (self.tls_dir / "ca.crt").read_bytes(),
            (self.tls_dir / "client.key").read_bytes(),
            (self.tls_dir / "client.crt").read_bytes(),
        )
        return grpc.secure_channel(self.address, credentials)

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(10)
