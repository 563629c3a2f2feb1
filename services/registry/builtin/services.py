"""core/v1 Services and Endpoints: kube's defaults and the checks strata makes.

strata runs no proxies: a Service is stored with the ClusterIP and NodePorts
allocated for it (services/registry/builtin/allocation.py), and Endpoints are stored as
clients (or the bootstrap controller, for `kubernetes`) write them.

Their declarations (`Resource`s, with kube's columns) are here too;
services/registry/builtin/resources.py gathers them.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from services.registry.builtin import kind_schemas
from services.registry.builtin.allocation import (
    CLUSTER_IP,
    EXTERNAL_NAME,
    HEADLESS,
    LOAD_BALANCER,
    NODE_PORT,
    needs_cluster_ip,
    needs_node_ports,
)
from services.registry.builtin.podtemplates import selector_string
from services.registry.generic.declarations import AGE_COLUMN, NAME_COLUMN, Column, Resource
from services.registry.generic.strategy import (
    PORT_RANGE,
    Obj,
    check_decodable,
    port_causes,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
)
from strata.api import names
from strata.api.causes import (
    duplicate,
    forbidden,
    invalid_value,
    not_supported,
    required,
)
from strata.api.errors import Cause

SERVICE_TYPES = (CLUSTER_IP, EXTERNAL_NAME, LOAD_BALANCER, NODE_PORT)
AFFINITIES = ("ClientIP", "None")
IP_ERROR = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
# IsValidPortName: an IANA service name.
_PORT_NAME = re.compile(r"^[-a-z0-9]+$")

_SERVICE_TYPES = (
    ("spec", "Service", "v1.ServiceSpec"),
    ("spec.type", "ServiceSpec", "string:v1.ServiceType"),
    ("spec.clusterIP", "ServiceSpec", "string"),
    ("spec.selector", "ServiceSpec", "map[string]string"),
    ("spec.ports", "ServiceSpec", "[]v1.ServicePort"),
    ("spec.ports[].name", "ServicePort", "string"),
    ("spec.ports[].port", "ServicePort", "int32"),
    ("spec.ports[].nodePort", "ServicePort", "int32"),
    ("spec.ports[].protocol", "ServicePort", "string:v1.Protocol"),
    ("spec.externalName", "ServiceSpec", "string"),
)
_ENDPOINTS_TYPES = (
    ("subsets", "Endpoints", "[]v1.EndpointSubset"),
    ("subsets[].addresses", "EndpointSubset", "[]v1.EndpointAddress"),
    ("subsets[].addresses[].ip", "EndpointAddress", "string"),
    ("subsets[].ports", "EndpointSubset", "[]v1.EndpointPort"),
    ("subsets[].ports[].port", "EndpointPort", "int32"),
)


def _valid_port(number: Any) -> bool:
    return isinstance(number, int) and 1 <= number <= 65535


def port_name_errors(name: str) -> list[str]:
    """IsValidPortName."""
    errors = []
    if len(name) > 15:
        errors.append("must be no more than 15 characters")
    if not _PORT_NAME.match(name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if not any(c.isalpha() for c in name):
        errors.append("must contain at least one letter (a-z)")
    if name.startswith("-") or name.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def _default_service(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", CLUSTER_IP)
    if spec["type"] != EXTERNAL_NAME:
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if needs_node_ports(spec):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
    if spec["type"] != EXTERNAL_NAME:
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        if spec.get("clusterIP") == HEADLESS:
            spec["clusterIPs"] = [HEADLESS]


def _validate_ports(spec: Obj) -> list[Cause]:
    ports = spec.get("ports") or []
    causes: list[Cause] = []
    if not ports and needs_cluster_ip(spec):
        causes.append(required("spec.ports"))
    seen: set[str] = set()
    for i, port in enumerate(ports):
        at = f"spec.ports[{i}]"
        name = port.get("name") or ""
        if not name:
            if len(ports) > 1:
                causes.append(required(f"{at}.name"))
        else:
            causes.extend(
                invalid_value(f"{at}.name", name, e) for e in names.dns1123_label_errors(name)
            )
            if name in seen:
                causes.append(duplicate(f"{at}.name", name))
            seen.add(name)
        causes.extend(port_causes(port, "port", at))
        target = port.get("targetPort")
        if isinstance(target, str):
            causes.extend(
                invalid_value(f"{at}.targetPort", target, e) for e in port_name_errors(target)
            )
        elif target is not None and not _valid_port(target):
            causes.append(invalid_value(f"{at}.targetPort", target, PORT_RANGE))
        if spec.get("type") == CLUSTER_IP and port.get("nodePort"):
            detail = "may not be used when `type` is 'ClusterIP'"
            causes.append(forbidden(f"{at}.nodePort", detail))
    return causes


def validate_service_spec(spec: Obj) -> list[Cause]:
    kind = spec.get("type", "")
    if kind not in SERVICE_TYPES:
        return [not_supported("spec.type", kind, SERVICE_TYPES)]
    causes = _validate_ports(spec)
    cluster_ip = spec.get("clusterIP") or ""
    if kind == EXTERNAL_NAME:
        external = spec.get("externalName") or ""
        if not external:
            causes.append(required("spec.externalName"))
        else:
            causes.extend(
                invalid_value("spec.externalName", external, e)
                for e in names.dns1123_subdomain_errors(external.rstrip("."))
            )
        if cluster_ip:
            detail = "may not be set for ExternalName services"
            causes.append(forbidden("spec.clusterIPs", detail))
    elif cluster_ip == HEADLESS:
        if kind in (NODE_PORT, LOAD_BALANCER):
            detail = f"may not be set to 'None' for {kind} services"
            causes.append(invalid_value("spec.clusterIPs[0]", HEADLESS, detail))
    elif cluster_ip:
        try:
            ipaddress.ip_address(cluster_ip)
        except ValueError:
            causes.append(invalid_value("spec.clusterIPs[0]", cluster_ip, IP_ERROR))
    causes.extend(validate_labels(spec.get("selector") or {}, "spec.selector"))
    affinity = spec.get("sessionAffinity")
    if kind != EXTERNAL_NAME and affinity not in AFFINITIES:
        causes.append(not_supported("spec.sessionAffinity", affinity, AFFINITIES))
    return causes


class ServiceStrategy:
    namespaced = True

    def prepare_for_create(self, obj: Obj) -> None:
        check_decodable(obj, "Service", "v1", _SERVICE_TYPES)
        _default_service(obj)
        obj["status"] = {"loadBalancer": {}}

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validate_object_meta(
            obj, namespaced=True, name_is_label=True, name_errors=names.dns1035_label_errors
        )
        return causes + validate_service_spec(obj.get("spec") or {})

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        check_decodable(obj, "Service", "v1", _SERVICE_TYPES)
        obj["status"] = old.get("status", {})
        spec, old_spec = obj.setdefault("spec", {}), old.get("spec") or {}
        spec.setdefault("type", CLUSTER_IP)
        # kube's patchAllocatedValues: what was allocated stays unless asked otherwise.
        if needs_cluster_ip(old_spec) and needs_cluster_ip(spec) and not spec.get("clusterIP"):
            spec["clusterIP"] = old_spec.get("clusterIP")
            spec.setdefault("clusterIPs", old_spec.get("clusterIPs"))
        if needs_node_ports(old_spec) and needs_node_ports(spec):
            old_ports = {
                (p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
                for p in old_spec.get("ports") or []
            }
            for port in spec.get("ports") or []:
                if isinstance(port, dict) and not port.get("nodePort"):
                    key = (port.get("port"), port.get("protocol", "TCP"))
                    if old_ports.get(key):
                        port["nodePort"] = old_ports[key]
        if not needs_node_ports(spec):
            for port in spec.get("ports") or []:
                if isinstance(port, dict) and needs_node_ports(old_spec):
                    port.pop("nodePort", None)
        _default_service(obj)

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        causes = validate_object_meta_update(obj, old) + self.validate(obj)
        spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
        if needs_cluster_ip(old_spec) and needs_cluster_ip(spec):
            ip = spec.get("clusterIP")
            if ip != old_spec.get("clusterIP"):
                causes.append(invalid_value("spec.clusterIPs[0]", ip, "may not change once set"))
        return causes


class EndpointsStrategy:
    namespaced = True

    def prepare_for_create(self, obj: Obj) -> None:
        check_decodable(obj, "Endpoints", "v1", _ENDPOINTS_TYPES)
        _default_endpoints(obj)

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validate_object_meta(obj, namespaced=True, name_is_label=False)
        for i, subset in enumerate(obj.get("subsets") or []):
            at = f"subsets[{i}]"
            for j, address in enumerate(subset.get("addresses") or []):
                ip = address.get("ip") or ""
                try:
                    ipaddress.ip_address(ip)
                except ValueError:
                    causes.append(invalid_value(f"{at}.addresses[{j}].ip", ip, IP_ERROR))
            ports = subset.get("ports") or []
            for j, port in enumerate(ports):
                if len(ports) > 1 and not port.get("name"):
                    causes.append(required(f"{at}.ports[{j}].name"))
                causes.extend(port_causes(port, "port", f"{at}.ports[{j}]"))
        return causes

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        self.prepare_for_create(obj)

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_object_meta_update(obj, old) + self.validate(obj)


def _default_endpoints(obj: Obj) -> None:
    for subset in obj.get("subsets") or []:
        for port in subset.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


def ports_cell(obj: Obj) -> str:
    """A Service's PORT(S): "80/TCP", "80:30080/TCP", ... or "<none>"."""
    cells = []
    for port in (obj.get("spec") or {}).get("ports") or []:
        node = f":{port['nodePort']}" if port.get("nodePort") else ""
        cells.append(f"{port.get('port')}{node}/{port.get('protocol', 'TCP')}")
    return ",".join(cells) or "<none>"


def cluster_ip_cell(obj: Obj) -> str:
    spec = obj.get("spec") or {}
    if spec.get("type") == EXTERNAL_NAME:
        return "<none>"
    return str(spec.get("clusterIP") or "<none>")


def external_ip_cell(obj: Obj) -> str:
    spec = obj.get("spec") or {}
    if spec.get("type") == EXTERNAL_NAME:
        return str(spec.get("externalName", ""))
    ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    addresses = [i.get("ip") or i.get("hostname") for i in ingress] + list(
        spec.get("externalIPs") or []
    )
    if addresses:
        return ",".join(str(a) for a in addresses)
    return "<pending>" if spec.get("type") == LOAD_BALANCER else "<none>"


def selector_cell(obj: Obj) -> str:
    selector = (obj.get("spec") or {}).get("selector") or {}
    return selector_string({"matchLabels": selector}) or "<none>"


def endpoints_cell(obj: Obj) -> str:
    """An Endpoints' ENDPOINTS: its first three address:port pairs and how many more."""
    pairs = []
    for subset in obj.get("subsets") or []:
        ports = subset.get("ports") or [{}]
        for address in subset.get("addresses") or []:
            for port in ports:
                ip = address.get("ip", "")
                pairs.append(f"{ip}:{port['port']}" if "port" in port else ip)
    if not pairs:
        return "<none>"
    shown = ",".join(pairs[:3])
    return shown + (f" + {len(pairs) - 3} more..." if len(pairs) > 3 else "")


SERVICES = Resource(
    schema=kind_schemas.SERVICE,
    group="",
    version="v1",
    name="services",
    singular="service",
    kind="Service",
    namespaced=True,
    strategy=ServiceStrategy(),
    short_names=("svc",),
    categories=("all",),
    # As kube's: Services go one at a time (each releases its allocations).
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    return_deleted_object=True,
    field_label_conversion=True,
    columns=(
        NAME_COLUMN,
        Column(
            name="Type",
            type="string",
            description="The type of the service.",
            path="spec.type",
        ),
        Column(
            name="Cluster-IP",
            type="string",
            description="The cluster IP of the service.",
            cell=cluster_ip_cell,
        ),
        Column(
            name="External-IP",
            type="string",
            description="The external IP of the service.",
            cell=external_ip_cell,
        ),
        Column(
            name="Port(s)",
            type="string",
            description="The ports of the service.",
            cell=ports_cell,
        ),
        AGE_COLUMN,
        Column(
            name="Selector",
            type="string",
            priority=1,
            description="Route service traffic to pods with label keys and values matching "
            "this selector.",
            cell=selector_cell,
        ),
    ),
)

ENDPOINTS = Resource(
    schema=kind_schemas.ENDPOINTS,
    group="",
    version="v1",
    name="endpoints",
    singular="endpoints",
    kind="Endpoints",
    namespaced=True,
    strategy=EndpointsStrategy(),
    short_names=("ep",),
    columns=(
        NAME_COLUMN,
        Column(
            name="Endpoints",
            type="string",
            description="Endpoints of the service.",
            cell=endpoints_cell,
        ),
        AGE_COLUMN,
    ),
)
