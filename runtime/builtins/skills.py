"""Skills (R12): `asixto__invoke_skill` loads a tenant-defined skill into the turn. Its
instructions join the system message and its tools are offered from the next model call on —
never before it is loaded (the turn service applies the load; see runtime/builtins/__init__.py).

The tool is built per turn: its `skill` argument is an enum of the skills this message gives a
reason to load (one of a skill's trigger phrases is in it)."""

from django.utils.translation import gettext as _

from asixto.errors import ApplicationError
from runtime.builtins.models import MAX_SKILLS, Skill
from runtime.builtins.registry import PREFIX, BuiltinTool, Refusal, Result, definition, fold

NAME = PREFIX + "invoke_skill"


def skills_for(message: str, skills: list[Skill]) -> list[Skill]:
    """Of the enabled `skills`, those whose trigger phrases occur in `message`."""
    folded = fold(message)
    return [skill for skill in skills if any(phrase in folded for phrase in skill.folded_triggers)]


def reserved_tools(skills: list[Skill]) -> set[str]:
    """Tools that arrive only with a skill: every tool an enabled skill names (R12)."""
    return {name for skill in skills for name in skill.tools or []}


def _invoke(arguments, context) -> Result:
    skill = next((skill for skill in context.skills if skill.name == arguments["skill"]), None)
    if skill is None:
        raise Refusal(_("There is no skill named “%(name)s” for this conversation.") % {"name": arguments["skill"]})
    text = _("The skill “%(name)s” is loaded: follow its instructions; its tools are available now.") % {"name": skill.name}
    return Result({"skill": skill.name, "tools": list(skill.tools or [])}, text=text, skill=skill)


def skill_tool(skills: list[Skill]) -> BuiltinTool:
    listing = "; ".join(f"{skill.name}: {skill.description}" for skill in skills)
    return BuiltinTool(definition(
        name="invoke_skill", title="Load a skill",
        description=f"Loads a skill of the company: its instructions and tools. Skills: {listing}",
        properties={"skill": {"type": "string", "enum": [skill.name for skill in skills]}},
        required=["skill"],
        output={"properties": {"skill": {"type": "string"}, "tools": {"type": "array"}}, "required": ["skill"]},
        verb="load a skill", capabilities=["builtin"], read_only=True,
    ), run=_invoke)


# ---------------------------------------------------------------- managing skills (dashboard, API)

def unknown_tools(names) -> list[str]:
    """Names that are neither a built-in nor a live catalog tool's model-visible name."""
    from runtime.builtins.registry import TOOLS
    from tools.models import Tool

    names = [name for name in names if name not in TOOLS and name != NAME]
    known = set(Tool.objects.filter(prefixed_name__in=names, removed_in__isnull=True).values_list("prefixed_name", flat=True))
    return [name for name in names if name not in known]


def skill_save(*, skill: Skill | None = None, data: dict) -> Skill:
    """Create or change a skill from checked `data` (serializer or form fields)."""
    if skill is None and Skill.objects.count() >= MAX_SKILLS:
        raise ApplicationError(_("This account has %(max)d skills, the most it may have: delete one first.")
                               % {"max": MAX_SKILLS}, code="conflict", status_code=409)
    skill = skill or Skill()
    for field_name, value in data.items():
        setattr(skill, field_name, value)
    skill.full_clean()
    skill.save()
    return skill
