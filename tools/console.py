"""The test console's helpers: an arguments skeleton from a tool's inputSchema, so the admin
starts from the right shape instead of a blank box. Pure."""

PLACEHOLDER = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}, "null": None}


def placeholder(schema: dict):
    if not isinstance(schema, dict):
        return ""
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return arguments_skeleton(schema)
    return PLACEHOLDER.get(kind, "")


def arguments_skeleton(schema: dict) -> dict:
    """Every property of an object schema with a placeholder value; required ones first."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return {}
    required = [name for name in schema.get("required", []) if name in properties]
    names = required + [name for name in properties if name not in required]
    return {name: placeholder(properties[name]) for name in names}
