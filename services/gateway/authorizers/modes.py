"""--authorization-mode: which authorizers the gateway asks, in order (kube's
comma list of RBAC, AlwaysAllow, AlwaysDeny and Webhook), made into one union
(union.py) behind the superuser group, with what runs behind them: RBAC's
reflectors, which keep its policy in step with the registry."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import grpc

from services.gateway.authorizers import Mode
from services.gateway.authorizers.always_allow import AlwaysAllow
from services.gateway.authorizers.always_deny import AlwaysDeny
from services.gateway.authorizers.rbac import RBAC
from services.gateway.authorizers.rbac_policy import Reflected
from services.gateway.authorizers.union import Union
from services.gateway.authorizers.webhook import Webhook, WebhookOptions
from strata import service
from strata.client import ConfigError

MODES = ("AlwaysAllow", "AlwaysDeny", "RBAC", "Webhook")
DEFAULT = "RBAC"


class ModeError(ValueError):
    """What is wrong with the flags, in kube's words (one line each)."""


@dataclass(frozen=True)
class Options:
    modes: tuple[str, ...]
    webhook: WebhookOptions | None = None


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
        DEFAULT,
        "the authorizers asked, in order, comma-separated: " + ", ".join(MODES),
    )
    webhook = "authorization-webhook"
    service.flag(
        parser,
        f"{webhook}-config-file",
        "STRATA_AUTHORIZATION_WEBHOOK_CONFIG_FILE",
        "",
        "kubeconfig-shaped file naming the Webhook mode's server (its CA, client credentials)",
    )
    for name, default, what in (
        ("version", "v1beta1", "authorization.k8s.io version of the reviews sent: v1 or v1beta1"),
        ("cache-authorized-ttl", "5m", "how long the webhook's allowing answers are kept"),
        ("cache-unauthorized-ttl", "30s", "how long its other answers are kept"),
    ):
        env = "STRATA_AUTHORIZATION_WEBHOOK_" + name.upper().replace("-", "_")
        service.flag(parser, f"{webhook}-{name}", env, default, what)


def options_from(args: argparse.Namespace) -> Options:
    """The options the flags give (ModeError or ValueError, with kube's words, if not)."""
    webhook = None
    if args.authorization_webhook_config_file:
        webhook = WebhookOptions(
            Path(args.authorization_webhook_config_file),
            args.authorization_webhook_version,
            service.parse_duration(args.authorization_webhook_cache_authorized_ttl),
            service.parse_duration(args.authorization_webhook_cache_unauthorized_ttl),
        )
    return parse(args.authorization_mode, webhook)


class Configured:
    """The gateway's authorizer for options, and what it runs (start, then stop)."""

    def __init__(self, options: Options, registry: grpc.aio.Channel) -> None:
        self._reflected: Reflected | None = None
        self._webhook: Webhook | None = None
        chain: list[Mode] = []
        for mode in options.modes:
            if mode == "AlwaysAllow":
                chain.append(AlwaysAllow())
            elif mode == "AlwaysDeny":
                chain.append(AlwaysDeny())
            elif mode == "RBAC":
                self._reflected = Reflected(registry)
                chain.append(RBAC(self._reflected.policy))
            elif mode == "Webhook" and options.webhook is not None:
                try:
                    self._webhook = Webhook(options.webhook)
                except ConfigError as e:
                    raise ModeError(f"--authorization-webhook-config-file: {e}") from None
                chain.append(self._webhook)
        self.authorizer = Union(chain)

    def start(self) -> None:
        if self._reflected is not None:
            self._reflected.start()

    async def stop(self) -> None:
        if self._reflected is not None:
            await self._reflected.stop()
        if self._webhook is not None:
            await self._webhook.close()
