"""kube's authorization filter: the request's attributes (who, which verb, on
what, as kube's RequestInfoFactory reads a request) put to the gateway's
authorizer, and a request it does not allow refused 403 with kube's message
(or 500, as kube's InternalError writes it, when an authorizer failed on the
way and nobody allowed it).
Which authorizer is the app's choice (services/gateway/app.py, from
--authorization-mode: services/gateway/authorizers/modes.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from services.gateway import audit, paths, user
from services.gateway.authorizers import Attributes, Authorizer, AuthorizerError, Decision
from strata.api import names
from strata.api.errors import StatusError
from strata.api.goquote import quote

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


# kube's verb of each method (RequestInfoFactory); a GET without a name is a
# list or a watch, a DELETE without one a deletecollection.
_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


def _named_in_selector(request: web.Request) -> str:
    """The name a list or watch's fieldSelector asks for exactly
    (metadata.name=<name>, or ==), which kube authorizes as a named request."""
    selector = request.query.get("fieldSelector", "")
    for requirement in selector.split(","):
        key, op, value = requirement.partition("==")
        if not op:
            key, op, value = requirement.partition("=")
        if op and key.strip() == "metadata.name":
            name = value.strip()
            if name and not names.path_segment_errors(name):
                return name
    return ""


def attributes_of(request: web.Request) -> Attributes:
    """request as kube's RequestInfo and user describe it to an authorizer."""
    info = paths.info_of(request)
    who, path = user.of(request), request.path
    if info is None or not info.resource:
        return Attributes(who, request.method.lower(), path, False)
    name, namespace = info.name, info.namespace
    # A namespace's own requests are in that namespace, as kube parses them.
    if info.resource == "namespaces" and name:
        namespace = name
    method = request.method
    verb = "watch" if info.watch_path else _VERBS.get(method, method.lower())
    if not name and verb == "get":
        verb = "watch" if paths.truthy(request.query.get("watch")) else "list"
        name = _named_in_selector(request)
    elif not name and verb == "delete":
        verb = "deletecollection"
    # In the fields' order, positionally: built for every request.
    return Attributes(
        who,
        verb,
        path,
        True,
        info.group,
        info.version,
        info.resource,
        info.subresource,
        namespace,
        name,
    )


def _message(attributes: Attributes) -> str:
    """kube's forbiddenMessage: who cannot do what, to what or where."""
    name = quote(attributes.user.name)
    if not attributes.resource_request:
        return f"User {name} cannot {attributes.verb} path {quote(attributes.path)}"
    resource = attributes.resource
    if attributes.subresource:
        resource += "/" + attributes.subresource
    where = (
        f"in the namespace {quote(attributes.namespace)}"
        if attributes.namespace
        else "at the cluster scope"
    )
    return (
        f"User {name} cannot {attributes.verb} resource {quote(resource)} "
        f"in API group {quote(attributes.api_group)} {where}"
    )


def forbidden(attributes: Attributes, reason: str) -> StatusError:
    """kube's 403 for a request its authorizer did not allow (responsewriters.Forbidden
    around apierrors.NewForbidden)."""
    # As kube's sanitizer: the message may name a path, and is not HTML.
    message = _message(attributes).replace("&", "&amp;").replace("<", "&lt;")
    message = message.replace(">", "&gt;")
    detail = f"{message}: {reason}" if reason else message
    group, resource, name = attributes.api_group, attributes.resource, attributes.name
    qualified = f"{resource}.{group}" if group else resource
    if not resource:
        said = f"forbidden: {detail}"
    elif name:
        said = f"{qualified} {quote(name)} is forbidden: {detail}"
    else:
        said = f"{qualified} is forbidden: {detail}"
    return StatusError(
        code=403,
        reason="Forbidden",
        message=said,
        details={"name": name, "group": group, "kind": resource},
    )


def internal_error(request: web.Request, error: str) -> web.Response:
    """kube's responsewriters.InternalError: plain text, not a Status."""
    return web.Response(
        status=500,
        text=f"Internal Server Error: {quote(request.path_qs)}: {error}\n",
        content_type="text/plain",
        charset="utf-8",
        headers={"X-Content-Type-Options": "nosniff"},
    )


def middleware(authorizer: Authorizer) -> Middleware:
    @web.middleware
    async def authorized(request: web.Request, handler: Handler) -> web.StreamResponse:
        attributes = attributes_of(request)
        try:
            decision, reason = await authorizer.authorize(attributes)
        except AuthorizerError as e:
            audit.authorization_failed(request)
            return internal_error(request, str(e))
        # The audit log's authorization.k8s.io annotations (services/gateway/audit/).
        audit.authorized(request, decision is Decision.ALLOW, reason)
        if decision is not Decision.ALLOW:
            raise forbidden(attributes, reason)
        return await handler(request)

    return authorized
