"""Pod templates as workload resources carry them: kube's defaults and the
checks strata makes of them.

strata runs no pods, so only what a workload's own validation depends on is
checked: the template's labels against its selector, and containers with
names, images and well-formed ports.
"""

from __future__ import annotations

from typing import Any

from services.registry.generic.strategy import (
    Obj,
    port_causes,
    validate_annotations,
    validate_label_selector,
    validate_labels,
)
from strata.api import names
from strata.api.causes import (
    duplicate,
    invalid_value,
    not_supported,
    required,
)
from strata.api.errors import Cause
from strata.api.selectors import from_label_selector

PULL_POLICIES = ("Always", "IfNotPresent", "Never")

# The Go types of a pod template's fields strata reads, for check_decodable.
TEMPLATE_TYPES = (
    ("template", "PodTemplateSpec", "v1.PodTemplateSpec"),
    ("template.metadata.labels", "ObjectMeta", "map[string]string"),
    ("template.spec", "PodTemplateSpec", "v1.PodSpec"),
    ("template.spec.containers", "PodSpec", "[]v1.Container"),
    ("template.spec.containers[].name", "Container", "string"),
    ("template.spec.containers[].image", "Container", "string"),
    ("template.spec.containers[].ports", "Container", "[]v1.ContainerPort"),
    ("template.spec.containers[].ports[].containerPort", "ContainerPort", "int32"),
    ("template.spec.restartPolicy", "PodSpec", "string:v1.RestartPolicy"),
)


def _image_pull_policy(image: str) -> str:
    """kube's default: Always for an untagged or :latest image, else IfNotPresent."""
    if "@" in image:
        return "IfNotPresent"
    tail = image.rsplit("/", 1)[-1]
    tag = tail.rsplit(":", 1)[1] if ":" in tail else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def default_template(template: Obj) -> None:
    """SetDefaults_PodSpec and SetDefaults_Container for the fields kube fills."""
    spec = template.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for container in spec.get("containers") or []:
        if not isinstance(container, dict):
            continue
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("imagePullPolicy", _image_pull_policy(str(container.get("image", ""))))
        container.setdefault("resources", {})
        for port in container.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


def selector_is_valid(selector: dict[str, Any]) -> bool:
    return not validate_label_selector(selector, "")


def _validate_containers(containers: list[Any], field: str) -> list[Cause]:
    if not containers:
        return [required(field)]
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, container in enumerate(containers):
        at = f"{field}[{i}]"
        name = str(container.get("name") or "")
        if not name:
            causes.append(required(f"{at}.name"))
        else:
            causes.extend(
                invalid_value(f"{at}.name", name, e) for e in names.dns1123_label_errors(name)
            )
        if name in seen:
            causes.append(duplicate(f"{at}.name", name))
        seen.add(name)
        image = str(container.get("image") or "")
        if not image:
            causes.append(required(f"{at}.image"))
        elif image != image.strip():
            detail = "must not have leading or trailing whitespace"
            causes.append(invalid_value(f"{at}.image", image, detail))
        policy = container.get("imagePullPolicy", "")
        if policy not in PULL_POLICIES:
            causes.append(not_supported(f"{at}.imagePullPolicy", policy, PULL_POLICIES))
        for j, port in enumerate(container.get("ports") or []):
            causes.extend(port_causes(port, "containerPort", f"{at}.ports[{j}]"))
    return causes


def validate_template_for_selector(
    template: Obj, selector: dict[str, Any] | None, field: str
) -> list[Cause]:
    """ValidatePodTemplateSpecForReplicaSet for a valid selector: the template's
    metadata, its labels matched by the selector (a missing selector matches
    nothing, as kube's Nothing selector; an empty one everything), its
    containers, and restartPolicy Always."""
    metadata = template.get("metadata") or {}
    labels = metadata.get("labels") or {}
    causes: list[Cause] = []
    matched = selector is not None and from_label_selector(selector).matches(labels)
    if not matched and not (selector is not None and selector_empty(selector)):
        detail = "`selector` does not match template `labels`"
        causes.append(invalid_value(f"{field}.metadata.labels", labels, detail))
    causes.extend(validate_labels(labels, f"{field}.metadata.labels"))
    causes.extend(
        validate_annotations(metadata.get("annotations") or {}, f"{field}.metadata.annotations")
    )
    spec = template.get("spec") or {}
    causes.extend(_validate_containers(spec.get("containers") or [], f"{field}.spec.containers"))
    policy = spec.get("restartPolicy", "")
    if policy != "Always":
        causes.append(not_supported(f"{field}.spec.restartPolicy", policy, ("Always",)))
    return causes


def selector_empty(selector: dict[str, Any]) -> bool:
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def selector_string(selector: dict[str, Any] | None) -> str:
    """The selector as a label selector string (a Scale's status.selector)."""
    if not selector or not selector_is_valid(selector):
        return ""
    return str(from_label_selector(selector))


def port_warnings(template: Obj, at: str) -> list[str]:
    """kube's warnings for container ports two containers of a pod template (or
    one, twice) declare for the same port and protocol."""
    spec = template.get("spec") or {}
    seen: dict[str, list[tuple[Obj, str]]] = {}
    found: list[str] = []
    for field in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(field) or []):
            for j, port in enumerate((container or {}).get("ports") or []):
                path = f"{at}.spec.{field}[{i}].ports[{j}]"
                key = f"{port.get('containerPort')}/{port.get('protocol', 'TCP')}"
                for other, other_path in seen.get(key, []):
                    same_host = (port.get("hostIP", ""), port.get("hostPort", 0)) == (
                        other.get("hostIP", ""),
                        other.get("hostPort", 0),
                    )
                    if same_host:
                        found.append(f"{path}: duplicate port definition with {other_path}")
                    elif not port.get("hostPort") or not other.get("hostPort"):
                        found.append(f"{path}: overlapping port definition with {other_path}")
                seen.setdefault(key, []).append((port, path))
    return found
