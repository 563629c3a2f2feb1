"""The RBAC objects the gateway decides by, held in memory: Roles,
ClusterRoles, RoleBindings and ClusterRoleBindings, each kept in step with the
registry by a strata.client Reflector writing straight into this index (kube's
RBAC authorizer reads its informers' listers the same way: never a storage
read per request).

Indexed for a decision to cost microseconds however many objects there are: a
role's rules are compiled once (strata.api.rbac.Rule) and filed by verb, a
binding is filed under each subject it names (a ServiceAccount under its user
name), and what applies to a user in a namespace (each binding's role and
reason) is remembered until a role or binding changes, which is rare next to
requests.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import grpc

from services.gateway.user import User
from strata.api.goquote import quote
from strata.api.rbac import Rule, compile_rules
from strata.client import Reflector, RegistryResourceClient, Resource

Obj = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"
# How many users' bindings are remembered at once (all forgotten past it).
CACHE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class Role:
    """A Role's or ClusterRole's rules as written, and compiled: filed by verb
    for resource requests and for other paths (a rule with verb "*" under
    every verb, and under None for the verbs no rule names), so that a decision
    looks only at the rules that could allow it."""

    rules: tuple[Obj, ...]
    resource_rules: dict[str | None, tuple[Rule, ...]]
    path_rules: dict[str | None, tuple[Rule, ...]]

    @classmethod
    def of(cls, obj: Obj) -> Role:
        rules = tuple(r or {} for r in obj.get("rules") or ())
        compiled = compile_rules(rules)
        return cls(
            rules,
            _by_verb([r for r in compiled if r.resources]),
            _by_verb([r for r in compiled if r.urls]),
        )


def _by_verb(rules: list[Rule]) -> dict[str | None, tuple[Rule, ...]]:
    verbs = {v for r in rules for v in r.verbs}
    filed: dict[str | None, tuple[Rule, ...]] = {
        v: tuple(r for r in rules if r.all_verbs or v in r.verbs) for v in verbs
    }
    filed[None] = tuple(r for r in rules if r.all_verbs)
    return filed


def _subject_key(subject: Obj, namespace: str) -> str | None:
    """What a subject matches by: "u:<user name>" or "g:<group>" (kube's
    appliesToUser); None for one that matches no one."""
    kind, name = subject.get("kind"), str(subject.get("name") or "")
    if kind == "User":
        return "u:" + name
    if kind == "Group":
        return "g:" + name
    if kind == "ServiceAccount":
        # A subject without a namespace is the binding's own (none for a cluster binding).
        where = subject.get("namespace") or namespace
        return f"u:system:serviceaccount:{where}:{name}" if where else None
    return None


def _describe(subject: Obj, namespace: str) -> str:
    """kube's describeSubject."""
    kind, name = str(subject.get("kind") or ""), str(subject.get("name") or "")
    if kind == "ServiceAccount":
        return f"{kind} {quote(name + '/' + (subject.get('namespace') or namespace))}"
    return f"{kind} {quote(name)}"


@dataclass(eq=False, slots=True)
class Binding:
    """A RoleBinding (namespace set) or ClusterRoleBinding, as decisions read it."""

    namespace: str
    name: str
    role_kind: str
    role_name: str
    # Each subject key, with the index of the first subject of that key.
    first: dict[str, int]
    # "RBAC: allowed by ..." for each subject, as kube words an allowing rule's source.
    reasons: tuple[str, ...]

    @classmethod
    def of(cls, obj: Obj) -> Binding:
        metadata, ref = obj.get("metadata") or {}, obj.get("roleRef") or {}
        namespace, name = str(metadata.get("namespace") or ""), str(metadata["name"])
        role_kind, role_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        subjects = [s or {} for s in obj.get("subjects") or ()]
        first: dict[str, int] = {}
        for index, subject in enumerate(subjects):
            key = _subject_key(subject, namespace)
            if key is not None:
                first.setdefault(key, index)
        source = (
            f"RoleBinding {quote(name + '/' + namespace)}"
            if namespace
            else f"ClusterRoleBinding {quote(name)}"
        )
        reasons = tuple(
            f"RBAC: allowed by {source} of {role_kind} {quote(role_name)} to "
            + _describe(subject, namespace)
            for subject in subjects
        )
        return cls(namespace, name, role_kind, role_name, first, reasons)


# What a decision reads of a binding that applies: its role (or why there is
# none) and the reason it allows with.
Granted = tuple[Role | str, str]


class Policy:
    """See the module docstring. The four Feeds are what the reflectors write to."""

    def __init__(self) -> None:
        self.roles: dict[tuple[str, str], Role] = {}
        self.cluster_roles: dict[str, Role] = {}
        self._bindings: dict[tuple[str, str], Binding] = {}
        # By (namespace, subject key), then binding name ("" namespace: cluster bindings).
        self._by_subject: dict[tuple[str, str], dict[str, Binding]] = {}
        self._granted: dict[tuple[str, tuple[str, ...], str], tuple[Granted, ...]] = {}
        self.feeds = (
            Feed(self._put_role, self._drop_role),
            Feed(self._put_cluster_role, self._drop_cluster_role),
            Feed(self._put_binding, self._drop_binding),
            Feed(self._put_binding, self._drop_binding),
        )

    def synced(self) -> bool:
        return all(feed.synced.is_set() for feed in self.feeds)

    async def wait_synced(self) -> None:
        for feed in self.feeds:
            await feed.synced.wait()

    # -- what the reflectors change

    def _put_role(self, obj: Obj) -> None:
        metadata = obj["metadata"]
        self.roles[(metadata.get("namespace") or "", metadata["name"])] = Role.of(obj)
        self._granted.clear()

    def _drop_role(self, obj: Obj) -> None:
        metadata = obj["metadata"]
        self.roles.pop((metadata.get("namespace") or "", metadata["name"]), None)
        self._granted.clear()

    def _put_cluster_role(self, obj: Obj) -> None:
        self.cluster_roles[obj["metadata"]["name"]] = Role.of(obj)
        self._granted.clear()

    def _drop_cluster_role(self, obj: Obj) -> None:
        self.cluster_roles.pop(obj["metadata"]["name"], None)
        self._granted.clear()

    def _put_binding(self, obj: Obj) -> None:
        self._drop_binding(obj)
        binding = Binding.of(obj)
        self._bindings[(binding.namespace, binding.name)] = binding
        for key in binding.first:
            self._by_subject.setdefault((binding.namespace, key), {})[binding.name] = binding
        self._granted.clear()

    def _drop_binding(self, obj: Obj) -> None:
        metadata = obj["metadata"]
        found = self._bindings.pop((metadata.get("namespace") or "", metadata["name"]), None)
        if found is None:
            return
        for key in found.first:
            filed = self._by_subject.get((found.namespace, key))
            if filed is not None:
                filed.pop(found.name, None)
                if not filed:
                    del self._by_subject[(found.namespace, key)]
        self._granted.clear()

    # -- what decisions read

    def granted(self, user: User, namespace: str) -> tuple[Granted, ...]:
        """The ClusterRoleBindings, then the RoleBindings in namespace, that
        apply to user (kube's VisitRulesFor order), each as its role (or why
        there is none) and the reason it allows with (naming the first of its
        subjects that is the user): what a decision reads, remembered until a
        role or binding changes."""
        cache_key = (user.name, user.groups, namespace)
        found = self._granted.get(cache_key)
        if found is None:
            keys = ["u:" + user.name, *("g:" + g for g in user.groups)]
            applying = self._applying("", keys)
            if namespace:
                applying.update(self._applying(namespace, keys))
            found = tuple((self.role_of(b), b.reasons[i]) for b, i in applying.items())
            if len(self._granted) >= CACHE_SIZE:
                self._granted.clear()
            self._granted[cache_key] = found
        return found

    def _applying(self, namespace: str, keys: list[str]) -> dict[Binding, int]:
        """The bindings in namespace ("": the cluster's) that name one of keys,
        each with the index of its first subject among them."""
        applying: dict[Binding, int] = {}
        for key in keys:
            for binding in self._by_subject.get((namespace, key), {}).values():
                index = binding.first[key]
                if applying.get(binding, index) >= index:
                    applying[binding] = index
        return applying

    def role_of(self, binding: Binding) -> Role | str:
        """The role binding refers to, or why there is none (kube's GetRoleReferenceRules)."""
        if binding.role_kind == "ClusterRole":
            role = self.cluster_roles.get(binding.role_name)
            resource = "clusterrole"
        elif binding.role_kind == "Role":
            role = self.roles.get((binding.namespace, binding.role_name))
            resource = "role"
        else:
            return f"unsupported role reference kind: {quote(binding.role_kind)}"
        if role is None:
            return f"{resource}.{GROUP} {quote(binding.role_name)} not found"
        return role


class Feed:
    """One resource's objects as its reflector writes them (the Reflector's store)."""

    def __init__(self, put: Callable[[Obj], None], drop: Callable[[Obj], None]) -> None:
        self._put, self._drop = put, drop
        self._names: set[tuple[str, str]] = set()
        self.synced = asyncio.Event()

    def _key(self, obj: Obj) -> tuple[str, str]:
        metadata = obj["metadata"]
        return (metadata.get("namespace") or "", metadata["name"])

    def add(self, obj: Obj) -> None:
        self._names.add(self._key(obj))
        self._put(obj)

    update = add

    def delete(self, obj: Obj) -> None:
        self._names.discard(self._key(obj))
        self._drop(obj)

    def replace(self, objs: list[Obj]) -> None:
        kept = {self._key(o) for o in objs}
        for namespace, name in self._names - kept:
            self._drop({"metadata": {"namespace": namespace, "name": name}})
        self._names = set()
        for obj in objs:
            self.add(obj)
        self.synced.set()


_RESOURCES = tuple(
    Resource(group=GROUP, version="v1", resource=resource, namespaced=namespaced, kind=kind)
    for resource, namespaced, kind in (
        ("roles", True, "Role"),
        ("clusterroles", False, "ClusterRole"),
        ("rolebindings", True, "RoleBinding"),
        ("clusterrolebindings", False, "ClusterRoleBinding"),
    )
)


class Reflected:
    """A Policy kept in step with the registry by one reflector per resource."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.policy = Policy()
        self._reflectors = [
            Reflector(RegistryResourceClient(channel, resource), feed)
            for resource, feed in zip(_RESOURCES, self.policy.feeds, strict=True)
        ]
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(r.run(), name=f"rbac {r.client.resource.resource}")
            for r in self._reflectors
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []


def load(policy: Policy, objects: Iterable[Obj]) -> None:
    """Put objects (any of the four kinds) into policy, as synced reflectors
    would: for tests and the benchmark, which have no registry."""
    by_kind: dict[str, list[Obj]] = {}
    for obj in objects:
        by_kind.setdefault(str(obj.get("kind")), []).append(obj)
    kinds = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
    for kind, feed in zip(kinds, policy.feeds, strict=True):
        feed.replace(by_kind.get(kind, []))
