"""apimachinery for strata: Status errors, names, selectors and metadata helpers."""

from strata.api.errors import Cause, StatusError

__all__ = ["Cause", "StatusError"]
