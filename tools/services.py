"""The tools app's writes, by name, for existing callers. They live one module per concept:

    tools/servers.py        registering servers, reaching them, the discovery probe (M1–M4)
    tools/sync.py           catalog sync and versions (M5, C7)
    tools/certification.py  certification verdicts and findings (C1–C9), enabling tools
    tools/probes.py         live probes with sample arguments (C8, C9)

New code imports from those modules."""

from tools.certification import certify_tools, finding_codes, tool_set_enabled
from tools.probes import probe_meta, tool_probe, tool_set_sample_arguments
from tools.servers import (
    STDIO_ENV,
    approved_command,
    server_create,
    server_probe,
    server_target,
    server_update,
    validate_server_fields,
)
from tools.sync import catalog_sync, server_queue_sync, sync_mark

__all__ = [
    "STDIO_ENV",
    "approved_command",
    "catalog_sync",
    "certify_tools",
    "finding_codes",
    "probe_meta",
    "server_create",
    "server_probe",
    "server_queue_sync",
    "server_target",
    "server_update",
    "sync_mark",
    "tool_probe",
    "tool_set_enabled",
    "tool_set_sample_arguments",
    "validate_server_fields",
]
