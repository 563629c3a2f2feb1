"""Structured authorization configurations (kube's AuthorizationConfiguration)
as the tests write them: a webhook's settings, valid unless changed, and the
file's text around a list of authorizers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def webhook_settings(kubeconfig: Path, **changes: Any) -> dict[str, Any]:
    """A webhook's settings, as kube takes them; a change of None drops the field."""
    webhook: dict[str, Any] = {
        "timeout": "3s",
        "subjectAccessReviewVersion": "v1",
        "matchConditionSubjectAccessReviewVersion": "v1",
        "failurePolicy": "NoOpinion",
        "authorizedTTL": "5m",
        "unauthorizedTTL": "30s",
        "connectionInfo": {"type": "KubeConfigFile", "kubeConfigFile": str(kubeconfig)},
    }
    for key, value in changes.items():
        if value is None:
            webhook.pop(key, None)
        else:
            webhook[key] = value
    return webhook


def configuration(*authorizers: dict[str, Any]) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "AuthorizationConfiguration",
            "authorizers": list(authorizers),
        }
    )
