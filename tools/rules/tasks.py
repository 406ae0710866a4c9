"""MCP task support (issue 8): a tool whose definition says `execution.taskSupport:
"required"` can only run as an MCP task, which the gateway does not speak (only complete
results are accepted, G4). Every call would fail, so it blocks in both contract modes, with
a finding that says why instead of a failure on each call."""

from django.utils.translation import gettext_lazy as _

from .findings import Finding, blocking


def check_task_support(execution) -> list[Finding]:
    if isinstance(execution, dict) and execution.get("taskSupport") == "required":
        return [blocking(
            "G4",
            _("The tool requires MCP task support (execution.taskSupport: “required”), which the gateway does not offer: every call would fail."),
            _("Let the tool also run as a plain call (taskSupport “optional” or “forbidden”), answering with a complete result."),
        )]
    return []
