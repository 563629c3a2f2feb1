"""System: etcd and the four services as child processes on loopback.

Each process logs to $STRATA_HOME/logs/<name>.log. A flock on $STRATA_HOME/lock
(HomeLock) keeps a second system out of a home in use; every child inherits it, so
the home stays locked until the last of them has exited, even if the process
that started them was killed outright. On Linux the children started from the
main thread also get SIGTERM when that process dies (_pdeathsig), so they do
not outlive it by more than their own shutdown. etcd's ports are kept in
$STRATA_HOME/ports.json so a restart reuses the data dir with the same member
URLs; the services take free ports each time (the gateway's comes from
STRATA_PORT, 6443 by default), so two instances can run side by side. The
services' gRPC hops are mutual TLS with the certificates strata.tls keeps in
$STRATA_HOME/pki/grpc (made on first start); etcd serves https and admits
only storage's client certificate, from $STRATA_HOME/pki/etcd (_etcd_tls).
Secrets are encrypted at rest with the key of $STRATA_HOME/encryption-config.yaml,
made on first start (_encryption), unless STRATA_ENCRYPTION_CONFIG names a
configuration of the user's own.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata import serviceaccounts, tls
from strata.dev._encryption import ensure_encryption_config
from strata.dev._etcd import etcd_command, find_etcd
from strata.dev._etcd_tls import EtcdCertificates
from strata.dev._lock import HomeLock
from strata.etcd import Etcd
from strata.proto.etcd.etcdserverpb import rpc_pb2, rpc_pb2_grpc

REPO_ROOT = Path(__file__).resolve().parents[2]
PDEATHSIG = Path(__file__).resolve().with_name("_pdeathsig.py")
START_TIMEOUT_SECONDS = 60.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_free(port: int) -> bool:
    """Whether etcd can listen on port again. With SO_REUSEADDR, as Go's
    listeners have it: connections etcd itself closed as it stopped, left in
    TIME_WAIT on its port, do not hold the port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@dataclass(frozen=True, kw_only=True)
class Endpoints:
    gateway: str
    etcd: str
    storage: str
    cacher: str
    registry: str
    storage_metrics: str = ""


class StartError(RuntimeError):
    pass


class System:
    def __init__(
        self,
        home: Path,
        *,
        gateway_port: int | None = None,
        env: dict[str, str] | None = None,
        etcd_binary: Path | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        """progress, if given, is told each slow step ("starting etcd", ...)
        as it begins, for a person watching `make run`."""
        self.home = home.resolve()
        self.gateway_port = (
            gateway_port if gateway_port is not None else int(os.environ.get("STRATA_PORT", "6443"))
        )
        self._env = {**os.environ, **(env or {})}
        given = self._env.get("STRATA_ENCRYPTION_CONFIG")
        # The storage service runs from the repository root; keep the path valid.
        self._given_encryption_config = Path(given).resolve() if given else None
        self._env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO_ROOT), self._env.get("PYTHONPATH", "")) if p
        )
        self._etcd_binary = etcd_binary
        self._progress = progress or (lambda _step: None)
        self._lock = HomeLock(self.home)
        self._processes: list[tuple[str, subprocess.Popen[bytes]]] = []
        self._how: dict[str, tuple[list[str], Callable[[], bool]]] = {}
        self.endpoints: Endpoints | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.home / "kubeconfig"

    @property
    def ca_file(self) -> Path:
        return self.home / "pki" / "ca.crt"

    @property
    def grpc_pki(self) -> Path:
        """strata's internal CA and each service's certificate (strata.tls)."""
        return self.home / "pki" / "grpc"

    def grpc_identity(self, service: str) -> tls.Identity:
        """service's identity on the gRPC hops ("storage", ..., "gateway")."""
        return tls.files(self.grpc_pki, service).read()

    def grpc_channel(self, service: str, caller: str) -> grpc.aio.Channel:
        """An asyncio channel to service ("storage", "cacher", "registry"),
        presenting caller's certificate: what caller's own channel is."""
        assert self.endpoints is not None
        return grpc.aio.secure_channel(
            getattr(self.endpoints, service),
            tls.channel_credentials(self.grpc_identity(caller)),
            options=tls.channel_options(tls.SERVES[service][0]),
        )

    @property
    def etcd_certificates(self) -> EtcdCertificates:
        """etcd's CA and certificates, and storage's client certificate."""
        return EtcdCertificates(self.home / "pki" / "etcd")

    @property
    def encryption_config(self) -> Path:
        """The storage service's EncryptionConfiguration: STRATA_ENCRYPTION_CONFIG's,
        else the one made in the home on first start."""
        return self._given_encryption_config or self.home / "encryption-config.yaml"

    def etcd_flags(self) -> list[str]:
        """The storage service's flags that reach this system's etcd
        (`strata storage reencrypt` takes the same)."""
        assert self.endpoints is not None
        return [f"--etcd={self.endpoints.etcd}", *self.etcd_certificates.client_flags()]

    def etcd_client(self) -> Etcd:
        """A client of this system's etcd with storage's certificate (to look
        behind the API). Its channels belong to the event loop it is made in."""
        assert self.endpoints is not None
        return Etcd(self.endpoints.etcd, tls=self.etcd_certificates.client_tls())

    @property
    def admin_token(self) -> str:
        return (self.home / "admin-token").read_text().strip()

    # --- processes ---------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        logs = self.home / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        if (
            sys.platform.startswith("linux")
            # The death signal follows the forking thread, not the process: a
            # child started from a worker thread would die with that thread.
            and threading.current_thread() is threading.main_thread()
        ):
            argv = [sys.executable, "-I", "-S", str(PDEATHSIG), str(os.getpid()), *argv]
        # Each child holds the home lock too (pass_fds makes it inheritable in
        # the child only), and is recorded in the lock file by name and pid.
        fds = () if self._lock.fd is None else (self._lock.fd,)
        with open(logs / f"{name}.log", "ab") as log:
            process = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._env,
                cwd=REPO_ROOT,
                pass_fds=fds,
            )
        self._lock.add_child(name, process.pid)
        self._processes.append((name, process))
        return process

    def _service(self, name: str, *flags: str) -> list[str]:
        where = tls.files(self.grpc_pki, name)
        identity = (
            f"--grpc-ca-file={where.ca}",
            f"--grpc-cert-file={where.cert}",
            f"--grpc-key-file={where.key}",
        )
        return [sys.executable, "-m", f"services.{name}", *identity, *flags]

    def _launch(self, name: str, argv: list[str], ready: Callable[[], bool]) -> None:
        """Start a child and wait until ready says it serves; remembered, so
        that restart can start it again the same way."""
        self._how[name] = (argv, ready)
        self._progress(f"starting {name}")
        self._wait(name, self._spawn(name, argv), ready)

    def stop_one(self, name: str, timeout: float = 10.0) -> None:
        """SIGTERM one child (SIGKILL if it lingers) and forget its process."""
        process = self.process(name)
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._lock.remove_child(process.pid)
        self._processes = [(n, p) for n, p in self._processes if p is not process]

    def start_one(self, name: str) -> None:
        """Start a stopped child again, as it was first started."""
        argv, ready = self._how[name]
        self._wait(name, self._spawn(name, argv), ready)

    def restart(self, name: str) -> None:
        self.stop_one(name)
        self.start_one(name)

    def _wait(self, name: str, process: subprocess.Popen[bytes], check: Callable[[], bool]) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise StartError(
                    f"{name} exited with {process.returncode}; see {self.home}/logs/{name}.log"
                )
            try:
                if check():
                    return
            except Exception:  # not up yet
                pass
            time.sleep(0.1)
        raise StartError(f"{name} did not become healthy; see {self.home}/logs/{name}.log")

    def _grpc_serving(self, address: str, name: str) -> bool:
        """Whether name serves; health answers any of strata's certificates,
        so each service is asked with its own."""
        credentials = tls.channel_credentials(self.grpc_identity(name))
        options = tls.channel_options(tls.SERVES[name][0])
        with grpc.secure_channel(address, credentials, options) as channel:
            answer = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=1
            )
        return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)

    def _etcd_serving(self, address: str) -> bool:
        credentials = self.etcd_certificates.client_tls().credentials()
        with grpc.secure_channel(address, credentials) as channel:
            rpc_pb2_grpc.MaintenanceStub(channel).Status(rpc_pb2.StatusRequest(), timeout=1)
        return True

    def _gateway_ready(self, url: str) -> bool:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        with urllib.request.urlopen(
            f"{url}/readyz?exclude=watch-cache", context=context, timeout=2
        ) as response:
            return bool(response.status == 200)

    def _etcd_ports(self) -> tuple[int, int]:
        saved = self.home / "ports.json"
        if saved.exists():
            ports = json.loads(saved.read_text())
            client, peer = int(ports["etcd_client"]), int(ports["etcd_peer"])
            if _port_free(client) and _port_free(peer):
                return client, peer
        client, peer = free_port(), free_port()
        saved.write_text(json.dumps({"etcd_client": client, "etcd_peer": peer}))
        return client, peer

    def start(self) -> Endpoints:
        """Start everything, or raise HomeBusy at once, changing nothing, if
        another process runs a system in this home."""
        self._lock.acquire()
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> Endpoints:
        etcd = self._etcd_binary or find_etcd(progress=self._progress)
        tls.ensure(self.grpc_pki)
        self.etcd_certificates.ensure()
        if self._given_encryption_config is None:
            ensure_encryption_config(self.encryption_config)
        client, peer = self._etcd_ports()
        etcd_addr = f"127.0.0.1:{client}"
        etcd_argv = etcd_command(
            etcd,
            data_dir=self.home / "etcd",
            client_url=f"https://{etcd_addr}",
            peer_port=peer,
            log_level="warn",
            peer_scheme="https",
            extra=self.etcd_certificates.server_flags(),
        )
        self._launch("etcd", etcd_argv, lambda: self._etcd_serving(etcd_addr))

        storage = f"127.0.0.1:{free_port()}"
        storage_metrics = f"127.0.0.1:{free_port()}"
        self._launch(
            "storage",
            self._service(
                "storage",
                f"--listen={storage}",
                f"--etcd=https://{etcd_addr}",
                *self.etcd_certificates.client_flags(),
                f"--encryption-provider-config={self.encryption_config}",
                f"--metrics-listen={storage_metrics}",
            ),
            lambda: self._grpc_serving(storage, "storage"),
        )

        cacher = f"127.0.0.1:{free_port()}"
        self._launch(
            "cacher",
            self._service("cacher", f"--listen={cacher}", f"--storage={storage}"),
            lambda: self._grpc_serving(cacher, "cacher"),
        )

        registry = f"127.0.0.1:{free_port()}"
        # The service-account key pair: the registry signs, the gateway verifies.
        signing_key, public_key = serviceaccounts.ensure_key_pair(self.home / "pki")
        self._launch(
            "registry",
            self._service(
                "registry",
                f"--listen={registry}",
                f"--storage={cacher}",
                f"--service-account-signing-key-file={signing_key}",
                f"--root-ca-file={self.ca_file}",
            ),
            lambda: self._grpc_serving(registry, "registry"),
        )

        port = self.gateway_port or free_port()
        url = f"https://127.0.0.1:{port}"
        self._launch(
            "gateway",
            self._service(
                "gateway",
                f"--listen=127.0.0.1:{port}",
                f"--registry={registry}",
                f"--home={self.home}",
                f"--service-account-key-file={public_key}",
            ),
            lambda: self._gateway_ready(url),
        )

        self.endpoints = Endpoints(
            gateway=url, etcd=f"https://{etcd_addr}", storage=storage, cacher=cacher,
            registry=registry, storage_metrics=f"http://{storage_metrics}/metrics",
        )  # fmt: skip
        (self.home / "endpoints.json").write_text(json.dumps(asdict(self.endpoints), indent=2))
        self._write_kubeconfig(url)
        return self.endpoints

    def _write_kubeconfig(self, url: str) -> None:
        ca = base64.b64encode(self.ca_file.read_bytes()).decode()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "strata", "cluster": {"server": url, "certificate-authority-data": ca}}
            ],
            "users": [{"name": "admin", "user": {"token": self.admin_token}}],
            "contexts": [
                {
                    "name": "strata",
                    "context": {"cluster": "strata", "user": "admin", "namespace": "default"},
                }
            ],
            "current-context": "strata",
        }
        fd = os.open(self.kubeconfig, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(config, f, indent=2)  # JSON is YAML; kubectl reads it as is

    def process(self, name: str) -> subprocess.Popen[bytes]:
        """The running child called name ("etcd", "storage", ...)."""
        return next(p for n, p in self._processes if n == name)

    def failed(self) -> str | None:
        """The name of a child that has exited, if any."""
        for name, process in self._processes:
            if process.poll() is not None:
                return name
        return None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM every child, newest first; SIGKILL what has not exited in
        time; then let another system have the home."""
        for name, _ in reversed(list(self._processes)):
            self.stop_one(name, timeout)
        self._lock.release()
