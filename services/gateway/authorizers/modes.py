"""Which authorizers the gateway asks, in order, made into one union (union.py)
behind the superuser group, with what runs behind them: RBAC's reflectors,
which keep its policy in step with the registry, and the watch on a
structured configuration's file.

Either kube's flags (--authorization-mode, a comma list of RBAC, AlwaysAllow,
AlwaysDeny and Webhook, with --authorization-webhook-*) or its structured
configuration (--authorization-config: configuration.py), never both. The
configuration file is read again when it changes, as kube reloads it: a valid
one replaces the chain within a second or so, an invalid one is logged and
the chain in force stays."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

import grpc

from services.gateway.authorizers import Mode
from services.gateway.authorizers import configuration as structured
from services.gateway.authorizers.always_allow import AlwaysAllow
from services.gateway.authorizers.always_deny import AlwaysDeny
from services.gateway.authorizers.rbac import RBAC
from services.gateway.authorizers.rbac_policy import Reflected
from services.gateway.authorizers.union import Union
from services.gateway.authorizers.webhook import Webhook, WebhookOptions
from strata import service, telemetry
from strata.client import ConfigError

log = telemetry.get_logger("strata.gateway.authorization")
MODES = ("AlwaysAllow", "AlwaysDeny", "RBAC", "Webhook")
DEFAULT = "RBAC"
_WEBHOOK_DEFAULTS = {
    "version": "v1beta1",
    "cache-authorized-ttl": "5m",
    "cache-unauthorized-ttl": "30s",
}
# How often the configuration file is looked at for a change.
RELOAD_SECONDS = 0.5
# How long a replaced webhook is kept open for the requests still asking it
# (longer than any webhook's timeout).
RETIRE_SECONDS = 40.0


class ModeError(ValueError):
    """What is wrong with the flags, in kube's words (one line each)."""


@dataclass(frozen=True)
class Options:
    modes: tuple[str, ...]
    webhook: WebhookOptions | None = None
    # --authorization-config (then modes and webhook are unused).
    config_file: Path | None = None


def parse(text: str, webhook: WebhookOptions | None = None) -> Options:
    """The modes text names, checked as kube's AuthorizationOptions.Validate."""
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    problems = [] if modes else ["at least one authorization-mode must be passed"]
    for mode in modes:
        if mode not in MODES:
            problems.append(f'authorization-mode "{mode}" is not a valid mode')
        if mode == "Webhook" and webhook is None:
            problems.append("authorization-mode Webhook's authorization config file not passed")
    if len(set(modes)) != len(modes):
        listed = " ".join(f'"{m}"' for m in modes)
        problems.append(f"authorization-mode [{listed}] has mode specified more than once")
    if problems:
        raise ModeError("\n".join(problems))
    return Options(modes, webhook if "Webhook" in modes else None)


def add_flags(parser: argparse.ArgumentParser) -> None:
    service.flag(
        parser,
        "authorization-mode",
        "STRATA_AUTHORIZATION_MODE",
        "",
        "the authorizers asked, in order, comma-separated: "
        + ", ".join(MODES)
        + f" (default {DEFAULT} unless --authorization-config is given)",
    )
    service.flag(
        parser,
        "authorization-config",
        "STRATA_AUTHORIZATION_CONFIG",
        "",
        "kube's AuthorizationConfiguration file (apiserver.config.k8s.io): the authorizers "
        "in order, webhooks with match conditions; not with the other --authorization-* flags",
    )
    webhook = "authorization-webhook"
    service.flag(
        parser,
        f"{webhook}-config-file",
        "STRATA_AUTHORIZATION_WEBHOOK_CONFIG_FILE",
        "",
        "kubeconfig-shaped file naming the Webhook mode's server (its CA, client credentials)",
    )
    for name, what in (
        ("version", "authorization.k8s.io version of the reviews sent: v1 or v1beta1"),
        ("cache-authorized-ttl", "how long the webhook's allowing answers are kept"),
        ("cache-unauthorized-ttl", "how long its other answers are kept"),
    ):
        env = "STRATA_AUTHORIZATION_WEBHOOK_" + name.upper().replace("-", "_")
        default = _WEBHOOK_DEFAULTS[name]
        service.flag(parser, f"{webhook}-{name}", env, "", f"{what} (default {default})")


def options_from(args: argparse.Namespace) -> Options:
    """The options the flags give (ModeError or ValueError, with kube's words, if not)."""
    given = {
        name: getattr(args, "authorization_webhook_" + name.replace("-", "_"))
        for name in _WEBHOOK_DEFAULTS
    }
    if args.authorization_config:
        if args.authorization_mode or args.authorization_webhook_config_file or any(given.values()):
            raise ModeError(
                "--authorization-config can not be specified when --authorization-mode or "
                "--authorization-webhook-* flags are defined"
            )
        return Options((), config_file=Path(args.authorization_config))
    webhook = None
    if args.authorization_webhook_config_file:
        value = {name: given[name] or default for name, default in _WEBHOOK_DEFAULTS.items()}
        webhook = WebhookOptions(
            Path(args.authorization_webhook_config_file),
            value["version"],
            service.parse_duration(value["cache-authorized-ttl"]),
            service.parse_duration(value["cache-unauthorized-ttl"]),
        )
    return parse(args.authorization_mode or DEFAULT, webhook)


class Configured:
    """The gateway's authorizer for options, and what it runs (start, then stop)."""

    def __init__(self, options: Options, registry: grpc.aio.Channel) -> None:
        self._registry = registry
        self._reflected: Reflected | None = None
        self._webhooks: list[Webhook] = []
        # Webhooks a reload replaced, and when.
        self._retired: list[tuple[float, Webhook]] = []
        self._config_file = options.config_file
        # The configuration file's bytes as last read.
        self._seen = b""
        self._watching: asyncio.Task[None] | None = None
        self._started = False
        if options.config_file is not None:
            self._seen = structured.read_file(options.config_file)
            chain = self._built(structured.authorizers_of(self._seen))
        else:
            chain = self._from_flags(options)
        self.authorizer = Union(chain)

    def _from_flags(self, options: Options) -> list[Mode]:
        chain: list[Mode] = []
        for mode in options.modes:
            if mode == "Webhook" and options.webhook is not None:
                try:
                    chain.append(self._webhook(options.webhook))
                except ConfigError as e:
                    raise ModeError(f"--authorization-webhook-config-file: {e}") from None
            else:
                chain.append(self._mode(mode))
        return chain

    def _mode(self, mode: str) -> Mode:
        if mode == "AlwaysAllow":
            return AlwaysAllow()
        if mode == "AlwaysDeny":
            return AlwaysDeny()
        if mode == "RBAC":
            if self._reflected is None:
                self._reflected = Reflected(self._registry)
                if self._started:
                    self._reflected.start()
            return RBAC(self._reflected.policy)
        raise ModeError(
            f"invalid authorization config: the {mode} authorizer is not served by strata"
        )

    def _webhook(self, options: WebhookOptions) -> Webhook:
        webhook = Webhook(options)
        self._webhooks.append(webhook)
        return webhook

    def _built(self, authorizers: tuple[structured.Authorizer, ...]) -> list[Mode]:
        """The chain a structured configuration names."""
        chain: list[Mode] = []
        for authorizer in authorizers:
            if authorizer.webhook is None:
                chain.append(self._mode(authorizer.type))
                continue
            try:
                chain.append(self._webhook(authorizer.webhook))
            except ConfigError as e:
                raise ModeError(f"invalid authorization config: {e}") from None
        return chain

    def start(self) -> None:
        self._started = True
        if self._reflected is not None:
            self._reflected.start()
        if self._config_file is not None and self._watching is None:
            self._watching = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        """Read the configuration again whenever the file changes."""
        while True:
            await asyncio.sleep(RELOAD_SECONDS)
            try:
                await self._reload()
            except Exception as e:  # one bad read must not end the watch
                log.error("reloading authorization config", error=str(e))

    async def _reload(self) -> None:
        assert self._config_file is not None
        try:
            data = await asyncio.to_thread(structured.read_file, self._config_file)
        except structured.ConfigError as e:
            log.error("reloading authorization config", error=str(e))
            return
        if data == self._seen:
            return
        self._seen = data
        retired = self._webhooks
        self._webhooks = []
        try:
            chain = self._built(structured.authorizers_of(data))
        except (structured.ConfigError, ModeError) as e:
            for webhook in self._webhooks:
                await webhook.close()
            self._webhooks = retired
            log.error("reloading authorization config", error=str(e))
            return
        self.authorizer.authorizers = tuple(chain)
        log.info("reloaded authorization config", file=str(self._config_file))
        now = asyncio.get_running_loop().time()
        self._retired += [(now, webhook) for webhook in retired]
        while self._retired and self._retired[0][0] + RETIRE_SECONDS < now:
            await self._retired.pop(0)[1].close()

    async def stop(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watching
        if self._reflected is not None:
            await self._reflected.stop()
        for webhook in [*self._webhooks, *(w for _, w in self._retired)]:
            await webhook.close()
