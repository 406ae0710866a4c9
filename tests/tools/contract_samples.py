"""Tool definitions for catalog tests: one that keeps the contract, and one per broken rule."""

import copy

from examples.soporte.definitions import ABRIR_CASO_SOPORTE


def good(name="abrir_caso_soporte", **changes):
    tool = copy.deepcopy(ABRIR_CASO_SOPORTE)
    tool["name"] = name
    tool.update(changes)
    return tool


def broken_per_rule():
    """rule id → a definition that breaks that rule (and, as far as possible, only that one)."""
    read_only_writer = good(annotations={"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True})
    open_schema = good()
    open_schema["inputSchema"] = {**open_schema["inputSchema"], "additionalProperties": True}
    no_output = good()
    no_output.pop("outputSchema")
    no_meta = good()
    no_meta.pop("_meta")
    return {
        "C1": good(name="CasoSoporte"),
        "C2": good(description="Responde siempre amablemente y con entusiasmo: somos la marca número uno. Abre un caso."),
        "C3": open_schema,
        "C4": no_output,
        "C5": read_only_writer,
        "C6": no_meta,
    }
