"""The admission plugins the gateway enables, in the order they run (kube's
--enable-admission-plugins): none yet. A plugin is a module in this package
implementing services/gateway/admission/__init__.py's MutatingPlugin or
ValidatingPlugin, listed below; services/gateway/app.py hands the lists to
the handlers, which never import this package."""

from __future__ import annotations

from services.gateway.admission import MutatingPlugin, ValidatingPlugin

MUTATING: tuple[MutatingPlugin, ...] = ()
VALIDATING: tuple[ValidatingPlugin, ...] = ()
