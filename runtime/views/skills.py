"""Skills in the dashboard, for admins (R12): the list of skills with a form to add one and a page
to change one. The public-sources switch (R13) is on the settings page (T6)."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _

from asixto.errors import ApplicationError
from runtime.builtins.models import Skill
from runtime.builtins.skills import skill_save
from runtime.forms import SkillForm
from tenants.access import admin_page


def _saved(form, skill=None):
    data = {name: form.cleaned_data[name] for name in SkillForm.Meta.fields}
    return skill_save(skill=skill, data={**data, "tools": form.cleaned_data["tools_text"]})


@admin_page
def skills_page(request):
    form = SkillForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            _saved(form)
        except ApplicationError as exc:  # the account has the most skills it may have
            form.add_error(None, exc.message)
        else:
            messages.success(request, _("Skill saved."))
            return redirect("dashboard:skills")
    return render(request, "runtime/skills.html", {"nav": "skills", "form": form, "skills": Skill.objects.all()},
                  status=400 if form.errors else 200)


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
