"""Built-in tools of the agent (R12, R13), one module per family:

    registry.py   definitions, reasons, the call path (validate, run, sanitise, record)
    followups.py  asixto__schedule_follow_up, asixto__create_reminder
    contacts.py   asixto__capture_contact
    documents.py  asixto__edit_document
    charts.py     asixto__draw_chart (data from the turn, spec for the channel)
    skills.py     asixto__invoke_skill (tenant-defined skills)
    public.py     asixto__web_search, asixto__read_page (behind the public-sources switch)
    models.py     what they write, skills

`TurnBuiltins` is what the turn service holds: the built-ins this message gives a reason for,
the catalog tools held back for skills, and the skills loaded so far."""

from dataclasses import dataclass, field

from django.utils import translation
from django.utils.translation import gettext as _

from runtime.builtins import charts, contacts, documents, followups, public  # noqa: F401  (they register)
from runtime.builtins.models import Skill
from runtime.builtins.registry import TOOLS, BuiltinTool, Context, allowed, call_builtin, fold, gives_reason, is_builtin
from runtime.builtins.skills import NAME as INVOKE_SKILL
from runtime.builtins.skills import reserved_tools, skill_tool, skills_for
from tools.catalog_cache import cached
from tools.gateway import CallContext, CallOutcome
from tools.models import ToolCall

def fact_source(source: str, response: dict | None) -> str:
    """R13: a fact from a public source says so wherever the turn's facts are read."""
    return f"{source} (public source)" if (response or {}).get("source") == "public" else source


__all__ = ["fact_source", "TurnBuiltins", "Context", "call_builtin", "is_builtin", "INVOKE_SKILL", "TOOLS"]


@dataclass
class TurnBuiltins:
    attached: dict[str, BuiltinTool]  # offered from the first model call
    skills: list  # skills this message may load
    held: dict = field(default_factory=dict)  # catalog tools (name → Tool) that arrive only with a skill
    loaded: list = field(default_factory=list)  # skills loaded so far, in order
    applied: int = 0  # how many of `loaded` the model's request already carries
    channel: str = ""  # the conversation's channel kind: what the exposure policy reads

    @classmethod
    def for_message(cls, *, message: str, catalog: dict, channel: str) -> "TurnBuiltins":
        """Built-ins whose reason is in `message` (R12) and that the tenant's policies allow on
        `channel`: the exposure policy's levels, and the public-sources switch for web search and
        page reading (T6, R13, issue 19 M1). `catalog` (name → Tool, as offered) loses the tools
        that belong to a skill: they are moved to `held`."""
        folded = fold(message)
        attached = {name: tool for name, tool in TOOLS.items() if allowed(tool, channel) and gives_reason(tool, folded)}
        if any(tool.public for tool in attached.values()):
            # One switch turns both on (R13): a search is read further, a page leads to a search.
            attached.update({name: tool for name, tool in TOOLS.items() if tool.public and allowed(tool, channel)})
        # Read once per catalog generation and process, like the offered tools (runtime/signals.py).
        enabled = cached(("enabled-skills",), lambda: list(Skill.objects.filter(enabled=True)))
        skills = skills_for(message, enabled)
        if skills:
            attached[INVOKE_SKILL] = skill_tool(skills)
        reserved = reserved_tools(enabled)
        held = {name: catalog.pop(name) for name in list(catalog) if name in reserved}
        for name in reserved & set(attached):
            attached.pop(name)  # a built-in a skill names also waits for the skill
        return cls(attached=attached, skills=skills, held=held, channel=channel)

    def load(self, skill) -> None:
        if all(loaded.name != skill.name for loaded in self.loaded):
            self.loaded.append(skill)

    def take_loaded(self, *, offered: dict) -> list[tuple[str, list]]:
        """Skills loaded since the last call, as (instructions, tools newly offered). Their tools
        join `offered` (name → tool) and are no longer held back."""
        fresh = self.loaded[self.applied:]
        self.applied = len(self.loaded)
        taken = []
        for skill in fresh:
            added = []
            for name in skill.tools or []:
                tool = self.held.pop(name, None) or TOOLS.get(name)
                if tool is None or name in offered or (is_builtin(name) and not allowed(tool, self.channel)):
                    continue  # a skill never brings a built-in the tenant's policies keep out
                offered[name] = tool
                if is_builtin(name):
                    self.attached[name] = tool
                added.append(tool)
            taken.append((skill.instructions, added))
        return taken

    def instructions(self) -> str:
        return "\n\n".join(skill.instructions for skill in self.loaded)

    def offers(self, name: str) -> bool:
        return name in self.attached

    def withheld(self, name: str) -> bool:
        """A built-in not attached to this turn, or a skill's tool before its skill loaded: never run."""
        return (is_builtin(name) and name not in self.attached) or name in self.held

    def send(self, *, name: str, arguments: dict, context: CallContext, language: str, evidence=()) -> tuple:
        """Run the attached built-in `name`. Returns the gateway-shaped outcome and what the turn
        stores with the step: {"source": "public"} (R13), {"chart": spec}, {"skill": name}. A
        built-in this turn did not attach, or a skill's tool before its skill loaded, is refused
        without running."""
        if self.withheld(name):
            with translation.override(language):
                text = _("The tool %(name)s is not available in this conversation now. Answer with what you have.") % {
                    "name": name}
            return CallOutcome(outcome=ToolCall.Outcome.UNAVAILABLE, model_text=text, error=text), {}
        outcome, result = call_builtin(tool=self.attached[name], arguments=arguments, context=Context(
            turn_id=context.turn_id, conversation_id=context.conversation_id, channel=context.channel,
            idempotency_key=context.idempotency_key, language=language, timezone=context.timezone,
            evidence=tuple(evidence), skills=tuple(self.skills)))
        extra = {}
        if result is not None:
            if result.public:
                extra["source"] = "public"
            if result.chart is not None:
                extra["chart"] = result.chart
            if result.skill is not None:
                extra["skill"] = result.skill.name
                self.load(result.skill)
        return outcome, extra

    def replay(self, stored_response: dict) -> None:
        """A re-run replays a stored step: a skill it loaded is loaded again (R10)."""
        name = (stored_response or {}).get("skill")
        skill = next((skill for skill in self.skills if skill.name == name), None)
        if skill is not None:
            self.load(skill)
