"""Input and output schemas: C3 (inputSchema) and C4 (outputSchema).

Severity, and why:
- an absent or invalid schema, or one that is not `type: object`, blocks: the
  gateway cannot validate arguments (G2) or results (G5) against it;
- a `required` name missing from `properties` blocks: with a closed schema no
  call can ever pass validation;
- `additionalProperties` not false blocks: the gateway's validation is the only
  thing between arguments the model invents and the tenant's system (G2);
- an untyped property warns: the call still works, the model just guesses;
- a `$ref` outside the schema (never fetched) or to nothing in it, a `$ref`
  that leads back to itself, a pattern RE2 cannot run, or patternProperties
  under unevaluatedProperties blocks: the gateway refuses to check values
  against such a schema (see validation.py), so no call could succeed.
"""

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from .findings import Finding, blocking, warning
from .validation import INVALID, MISSING_REF, PATTERN, REF_LOOP, REMOTE_REF, schema_check, schema_error, validator_class

__all__ = ["check_input_schema", "check_output_schema", "schema_error", "validator_class"]

# Keywords that give a property a type without a "type" key ({"enum": [...]}
# in the contract's own example).
_TYPING_KEYWORDS = ("type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf")


def check_input_schema(schema) -> list[Finding]:
    if schema is None:
        return [
            blocking(
                "C3",
                _("The tool has no inputSchema."),
                _("Declare an inputSchema with type object, its properties and additionalProperties: false."),
            )
        ]
    problem, problems = _shape_problem(schema)
    if problem:
        return [blocking("C3", format_lazy(_INVALID["inputSchema"], problem=problem), _INVALID_HINT)]
    findings: list[Finding] = _safety_findings("C3", "inputSchema", problems)
    if schema.get("additionalProperties") is not False:
        findings.append(
            blocking(
                "C3",
                _("The inputSchema does not set additionalProperties: false."),
                _("Close the schema so arguments the model invents are rejected before they reach your system."),
            )
        )
    properties = schema.get("properties", {})
    undefined = [n for n in schema.get("required", []) if n not in properties]
    if undefined:
        findings.append(
            blocking(
                "C3",
                format_lazy(_("Required arguments are not defined in properties: {names}."), names=", ".join(undefined)),
                _("Define every required argument under properties, or remove it from required."),
            )
        )
    untyped = [n for n, p in properties.items() if not (isinstance(p, dict) and any(k in p for k in _TYPING_KEYWORDS))]
    if untyped:
        findings.append(
            warning(
                "C3",
                format_lazy(_("Arguments without a type: {names}."), names=", ".join(untyped)),
                _("Give every argument a type (or an enum) so the model sends the right kind of value."),
            )
        )
    return findings


def check_output_schema(schema, *, compatible: bool = False) -> list[Finding]:
    if schema is None:
        # Without it the gateway cannot check structuredContent (G5). In compatible mode the
        # results are read as text, sanitised and cut like any other (G7), so it only warns.
        if compatible:
            return [warning(
                "C4", _("The tool has no outputSchema; its results are read as text, sanitised and cut."),
                _("Declare an outputSchema of type object describing structuredContent."),
            )]
        return [
            blocking(
                "C4",
                _("The tool has no outputSchema."),
                _("Declare an outputSchema of type object describing structuredContent."),
            )
        ]
    problem, problems = _shape_problem(schema)
    if problem:
        return [blocking("C4", format_lazy(_INVALID["outputSchema"], problem=problem), _INVALID_HINT)]
    return _safety_findings("C4", "outputSchema", problems)


_INVALID = {
    "inputSchema": _("The inputSchema is not valid: {problem}"),
    "outputSchema": _("The outputSchema is not valid: {problem}"),
}
_INVALID_HINT = _("Fix the schema so it is a valid JSON Schema (2020-12) whose type is object.")


def _shape_problem(schema) -> tuple[str | None, tuple]:
    """Why `schema` is not a valid JSON Schema whose root is `type: object` (None if it is), and
    what makes it unsafe to run (see validation.py)."""
    problem, problems = schema_check(schema)
    if problem:
        return problem, ()
    if schema.get("type") != "object":
        return 'type must be "object"', ()
    return None, problems


# What makes a valid schema unsafe to run (see validation.py): one message and hint per kind.
_SAFETY = {
    REMOTE_REF: (
        _("The {part} refers to {detail}, outside itself; remote references are never fetched."),
        _("Put the referenced definition under $defs and refer to it with a local $ref (#/$defs/…)."),
    ),
    MISSING_REF: (
        _("The {part} refers to {detail}, which points to nothing in it."),
        _("Fix the $ref so it points to a definition inside the schema."),
    ),
    REF_LOOP: (
        _("The {part}'s $ref {detail} leads back to itself without going deeper into the value."),
        _("Remove the loop: a schema may refer to itself only below properties or items."),
    ),
    PATTERN: (
        _("The {part} has the pattern {detail}, which cannot be checked in linear time ({reason})."),
        _("Write patterns in RE2 syntax: no backreferences or lookaround, no huge counted repetitions, at most 2,000 characters."),
    ),
}
_UNSUPPORTED = (
    _("The {part} combines patternProperties with unevaluatedProperties, which cannot be checked safely."),
    _("Use additionalProperties instead of unevaluatedProperties, or drop patternProperties."),
)
# A hostile schema can hold thousands of bad patterns; a few findings say enough.
_MAX_SAFETY_FINDINGS = 5


def _safety_findings(rule: str, part: str, problems: tuple) -> list[Finding]:
    findings = []
    for problem in problems[:_MAX_SAFETY_FINDINGS]:
        if problem.kind == INVALID:  # too deep to walk
            findings.append(blocking(rule, format_lazy(_INVALID[part], problem=problem.detail), _INVALID_HINT))
            continue
        message, hint = _SAFETY.get(problem.kind, _UNSUPPORTED)
        findings.append(blocking(rule, format_lazy(message, part=part, detail=problem.detail, reason=problem.reason), hint))
    return findings
