"""Classifying what a server answered (G4, G5, G6) and the compiled validators it needs, cached
per tool definition. Plain functions; no I/O."""

from dataclasses import dataclass, field

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for

from tools.rules.results import ERROR_TYPES, error_shape_problem

_VALIDATORS: dict[tuple, object] = {}
_MAX_CACHED = 5000


def compiled(schema: dict | None, cache_key: tuple):
    """A compiled validator for `schema`, built once per (tool, definition hash, part) (G5)."""
    if not isinstance(schema, dict):
        return None
    validator = _VALIDATORS.get(cache_key)
    if validator is None:
        if len(_VALIDATORS) >= _MAX_CACHED:
            _VALIDATORS.clear()
        validator = validator_for(schema, default=Draft202012Validator)(schema)
        _VALIDATORS[cache_key] = validator
    return validator


def _describe(error) -> str:
    where = "/".join(str(part) for part in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def first_error(validator, instance) -> str | None:
    if validator.is_valid(instance):  # the common case, and much cheaper than collecting errors
        return None
    error = best_match(validator.iter_errors(instance))
    return _describe(error) if error is not None else None


def all_errors(validator, instance, limit=3) -> str | None:
    """Up to `limit` problems, so a model can correct all of them in one go (G2)."""
    if validator.is_valid(instance):
        return None
    errors = sorted(validator.iter_errors(instance), key=lambda e: (list(e.absolute_path), e.message))
    return "; ".join(_describe(error) for error in errors[:limit]) or None


@dataclass
class Classified:
    outcome: str  # ok | business_error | invalid_output | unsupported_result
    violations: list[dict] = field(default_factory=list)
    error_type: str = ""
    user_message: str = ""


def classify(result: dict, *, output_validator) -> Classified:
    if not isinstance(result, dict):
        return Classified("invalid_output", [{"kind": "not_an_object", "detail": "the result is not a JSON object"}])
    result_type = result.get("resultType", "complete")
    if result_type != "complete":
        # input_required (multi-round) or anything unknown is never answered (G4).
        return Classified("unsupported_result", [{"kind": "result_type", "detail": f"resultType {str(result_type)[:50]!r}"}])
    if result.get("isError") is True:
        problem = error_shape_problem(result)
        if problem:
            return Classified("invalid_output", [{"kind": "error_shape", "detail": problem}])
        error = result["structuredContent"]["error"]
        return Classified("business_error", error_type=error["error_type"], user_message=error["user_message"].strip())
    if output_validator is not None:
        data = result.get("structuredContent")
        if data is None:
            return Classified("invalid_output", [{"kind": "output_schema", "detail": "no structuredContent"}])
        problem = first_error(output_validator, data)
        if problem:
            return Classified("invalid_output", [{"kind": "output_schema", "detail": problem[:500]}])
    return Classified("ok")


__all__ = ["ERROR_TYPES", "Classified", "all_errors", "classify", "compiled", "first_error"]
