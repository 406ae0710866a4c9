"""Skills and agent options in the dashboard, for admins (R12, R13): the list of skills with a
form to add one, a page to change one, and the public-sources switch."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from runtime.builtins.models import AgentOptions, Skill
from runtime.builtins.skills import skill_save
from runtime.forms import AgentOptionsForm, SkillForm
from tenants.access import admin_page


def _saved(form, skill=None):
    data = {name: form.cleaned_data[name] for name in SkillForm.Meta.fields}
    return skill_save(skill=skill, data={**data, "tools": form.cleaned_data["tools_text"]})


@admin_page
def skills_page(request):
    form = SkillForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        _saved(form)
        messages.success(request, _("Skill saved."))
        return redirect("dashboard:skills")
    options = AgentOptions.current()
    return render(request, "runtime/skills.html", {
        "nav": "skills", "form": form, "skills": Skill.objects.all(), "options": options,
        "options_form": AgentOptionsForm(initial={"public_sources": options.public_sources}),
    }, status=400 if form.errors else 200)


@admin_page
def skill_page(request, pk):
    skill = get_object_or_404(Skill, pk=pk)
    form = SkillForm(request.POST or None, instance=skill)
    if request.method == "POST":
        if "delete" in request.POST:
            skill.delete()
            messages.success(request, _("Skill removed."))
            return redirect("dashboard:skills")
        if form.is_valid():
            _saved(form, skill)
            messages.success(request, _("Skill saved."))
            return redirect("dashboard:skills")
    return render(request, "runtime/skill.html", {"nav": "skills", "form": form, "skill": skill},
                  status=400 if form.errors else 200)


@admin_page
@require_POST
def agent_options_change(request):
    form = AgentOptionsForm(request.POST)
    if form.is_valid():
        AgentOptions.objects.update_or_create(pk=1, defaults={"public_sources": form.cleaned_data["public_sources"]})
        messages.success(request, _("Agent options saved."))
    return redirect("dashboard:skills")
