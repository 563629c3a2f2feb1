"""An authorization webhook's matchConditions (kube's authorizer CEL): CEL over
the request as a v1 SubjectAccessReviewSpec (`request`), deciding whether the
webhook is asked at all. Any false: it is not (no opinion). All true: it is.
One failing, none false: the webhook's failure policy decides, and the
failure is the webhook's error (the request is answered 500 if nobody allows
it), as kube does it.

The spec is what kube's CEL sees: the user's name, uid, groups and extra
always, with resourceAttributes (every string field, empty or not) for a
resource request, nonResourceAttributes for any other, and neither field
there when it does not apply (reading it is an error: "no such key")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.gateway.authorizers import Attributes, aggregate
from services.gateway.field_errors import Problems
from strata import cel

MAX_CONDITIONS = 64
ENVIRONMENT = cel.Environment({"request": "strata.cel.v1.SubjectAccessReviewSpec"})


class ConditionFailed(Exception):
    """A match condition that failed as it ran (and none was false)."""


def request_of(attributes: Attributes) -> dict[str, Any]:
    """attributes as the `request` variable kube's match conditions see."""
    user = attributes.user
    request: dict[str, Any] = {
        "user": user.name,
        "groups": list(user.groups),
        "uid": user.uid,
        "extra": {key: list(values) for key, values in user.extra},
    }
    if attributes.resource_request:
        request["resourceAttributes"] = attributes.resource_attributes()
    else:
        request["nonResourceAttributes"] = {"path": attributes.path, "verb": attributes.verb}
    return request


@dataclass(frozen=True)
class Conditions:
    programs: tuple[cel.Program, ...] = ()

    @classmethod
    def compile(cls, given: list[Any], at: str, problems: Problems) -> Conditions:
        """given's expressions compiled, each problem noted as kube words it."""
        seen: set[str] = set()
        programs: list[cel.Program] = []
        for j, condition in enumerate(given):
            where = f"{at}[{j}].expression"
            expression = str(
                (condition if isinstance(condition, dict) else {}).get("expression") or ""
            )
            if not expression:
                problems.required(where)
                continue
            if expression in seen:
                problems.duplicate(where, expression)
                continue
            seen.add(expression)
            try:
                program = ENVIRONMENT.compile(expression)
            except cel.CompileError as e:
                # extra's lists are declared as protobuf's ListValue: of strings, in kube's CEL.
                detail = str(e).replace("list(dyn)", "list(string)")
                problems.invalid(where, expression, f"compilation failed: {detail}")
                continue
            if program.output != "bool":
                detail = f"must evaluate to bool but got {program.output}"
                problems.invalid(where, expression, detail)
                continue
            programs.append(program)
        return cls(tuple(programs))

    def match(self, attributes: Attributes) -> bool:
        """Whether the webhook is to be asked (ConditionFailed as above)."""
        if not self.programs:
            return True
        variables = {"request": request_of(attributes)}
        failures = []
        for program in self.programs:
            try:
                if program.evaluate(variables) is False:
                    return False
            except cel.EvaluationError as e:
                failures.append(
                    f"cel evaluation error: expression '{program.expression}' resulted in "
                    f"error: {e}"
                )
        if failures:
            raise ConditionFailed(aggregate(failures))
        return True
