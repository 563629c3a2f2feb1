"""CEL as kube compiles and runs it (cel-go there; Google's cel-cpp here, through
cel-expr-python), for every place a configuration or an object carries
expressions: an authorization webhook's matchConditions today.

An expression is checked against declared types (protobuf messages shaped as
kube's CEL sees the object: strata/proto/cel) and run over the object's JSON
as plain maps and lists, which is what kube runs it over: a field that is not
there is an error ("no such key"), as in kube, not a default. Compile and
evaluation errors are worded as cel-go words them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_strings
from google.protobuf import descriptor_pool

# The declared types live in the default pool once their module is imported.
import strata.proto.cel.v1.authorization_pb2  # noqa: F401

_STATUS = re.compile(r"^[A-Z_]+: ")
_TRAILER = re.compile(r" \[[A-Z_]+\]$")
# cel-cpp's words where cel-go's differ.
_WORDING = (
    (re.compile(r"undefined field '([^']*)' not found in struct '[^']*'"), r"undefined field '\1'"),
    (re.compile(r'Key not found in map : "((?:[^"\\]|\\.)*)"'), r"no such key: \1"),
)


class CompileError(ValueError):
    """An expression that does not compile, or not to the type wanted."""


class EvaluationError(Exception):
    """An expression that failed as it ran (a missing field, a division by 0)."""


def _worded(message: str) -> str:
    message = _TRAILER.sub("", _STATUS.sub("", message.strip()))
    for pattern, replacement in _WORDING:
        message = pattern.sub(replacement, message)
    return message


@dataclass(frozen=True)
class Program:
    expression: str
    # CEL's name of what it evaluates to: "bool", "string", "dyn"...
    output: str
    _program: Any

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """The expression's value over variables (JSON values), as Python values."""
        value = self._program.eval(data=dict(variables))
        if value.type() == cel.Type.ERROR:
            raise EvaluationError(_worded(str(value.value())))
        return value.plain_value()


class Environment:
    """Variables and their declared types (protobuf message names), and kube's
    libraries that strata has: the standard ones and the strings extension."""

    def __init__(self, variables: Mapping[str, str]) -> None:
        self._checking = cel.NewEnv(
            descriptor_pool=descriptor_pool.Default(),
            variables={name: cel.Type(kind) for name, kind in variables.items()},
            extensions=[ext_strings.ExtStrings()],
        )
        self._running = cel.NewEnv(
            variables=dict.fromkeys(variables, cel.Type.DYN),
            extensions=[ext_strings.ExtStrings()],
        )

    def compile(self, expression: str) -> Program:
        """expression, checked against the declared types (CompileError)."""
        try:
            checked = self._checking.compile(expression)
            program = self._running.compile(expression)
        except RuntimeError as e:
            raise CompileError(_worded(str(e))) from None
        return Program(expression, _type_name(checked.return_type()), program)


def _type_name(kind: Any) -> str:
    for name in ("BOOL", "STRING", "INT", "UINT", "DOUBLE", "BYTES", "NULL", "DYN"):
        if kind == getattr(cel.Type, name):
            return name.lower()
    return str(kind.name())
