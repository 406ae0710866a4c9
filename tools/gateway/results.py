"""Classifying what a server answered (G4, G5, G6) and the compiled validators it needs, cached
per tool definition. Plain functions; no I/O: validators come from tools.rules.validation, which
never fetches a `$ref` and runs patterns on RE2."""

from dataclasses import dataclass, field

from tools.bounded import BoundedDict
from tools.rules.results import ERROR_TYPES, error_shape_problem
from tools.rules.validation import UnusableSchema, all_errors, build_validator, first_error

_VALIDATORS: BoundedDict = BoundedDict(20_000)  # two per tool: input and output


def compiled(schema: dict | None, cache_key: tuple):
    """A compiled validator for `schema`, built once per (tool, definition hash, part) (G5).
    None when there is no schema; UnusableSchema (also cached) when it cannot be used safely."""
    if not isinstance(schema, dict):
        return None
    validator = _VALIDATORS.get(cache_key)
    if validator is None:
        try:
            validator = build_validator(schema)
        except UnusableSchema as exc:
            validator = exc
        _VALIDATORS[cache_key] = validator
    if isinstance(validator, UnusableSchema):
        raise UnusableSchema(validator.problems)  # a fresh one: a re-raised instance keeps growing its traceback
    return validator


@dataclass
class Classified:
    outcome: str  # ok | business_error | invalid_output | unsupported_result
    violations: list[dict] = field(default_factory=list)
    error_type: str = ""
    user_message: str = ""


def result_text(result) -> str:
    """The text blocks of a result, joined: what the server wrote, before any sanitising."""
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, list):
        return ""
    return "\n".join(block["text"] for block in content if isinstance(block, dict) and isinstance(block.get("text"), str))


def classify(result: dict, *, output_validator, compatible: bool = False) -> Classified:
    """`compatible`: the server's contract mode (issue 8). A plain `isError: true` with text is
    then a business error whose text reaches the model, marked as not in the G6 shape; in
    strict mode it is invalid output."""
    if not isinstance(result, dict):
        return Classified("invalid_output", [{"kind": "not_an_object", "detail": "the result is not a JSON object"}])
    result_type = result.get("resultType", "complete")
    if result_type != "complete":
        # input_required (multi-round) or anything unknown is never answered (G4).
        return Classified("unsupported_result", [{"kind": "result_type", "detail": f"resultType {str(result_type)[:50]!r}"}])
    if result.get("isError") is True:
        problem = error_shape_problem(result)
        if problem and compatible and result_text(result).strip():
            return Classified(
                "business_error", [{"kind": "error_shape", "detail": f"not in the contract's error shape (G6): {problem}"}],
                user_message=result_text(result).strip(),
            )
        if problem:
            return Classified("invalid_output", [{"kind": "error_shape", "detail": problem}])
        error = result["structuredContent"]["error"]
        return Classified("business_error", error_type=error["error_type"], user_message=error["user_message"].strip())
    if output_validator is not None:
        data = result.get("structuredContent")
        if data is None:
            return Classified("invalid_output", [{"kind": "output_schema", "detail": "no structuredContent"}])
        try:
            problem = first_error(output_validator, data)
        except UnusableSchema as exc:
            problem = f"outputSchema: {exc.message}"
        if problem:
            return Classified("invalid_output", [{"kind": "output_schema", "detail": problem[:500]}])
    return Classified("ok")


__all__ = ["ERROR_TYPES", "Classified", "UnusableSchema", "all_errors", "classify", "compiled", "first_error", "result_text"]
