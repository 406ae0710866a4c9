"""Names the model sees are unique (M6).

Server slugs become snake_case without `__` and without an underscore at either end, checked by
the database too; slugs stored before the rule are renamed to the nearest free valid slug (so
the tools of those servers change their model-visible names, which were ambiguous until now).
Every tool's prefixed name is then recomputed from its server's slug, and live prefixed names
get a unique index: with valid slugs two (server, tool) pairs can never produce the same name.
"""

import re

import django.core.validators
from django.db import migrations, models

SLUG = re.compile(r"\A[a-z][a-z0-9]*(_[a-z0-9]+)*\Z")
SLUG_MAX = 20


def _nearest(slug: str) -> str:
    words = [word for word in re.split(r"_+", slug.lower()) if re.fullmatch(r"[a-z0-9]+", word)]
    base = "_".join(words) or "server"
    if not base[0].isalpha():
        base = f"s_{base}"
    return base[:SLUG_MAX].rstrip("_")


def valid_slugs(slugs: list[str]) -> dict[str, str]:
    """old slug → new slug, for the slugs that break the rule; new slugs are valid and unique
    among all of `slugs`. Pure, so it can be tested on its own."""
    taken = set(slugs)
    renamed = {}
    for slug in sorted(s for s in slugs if not SLUG.match(s)):
        candidate, number = _nearest(slug), 1
        while candidate in taken:
            number += 1
            suffix = f"_{number}"
            candidate = _nearest(slug)[: SLUG_MAX - len(suffix)].rstrip("_") + suffix
        taken.add(candidate)
        renamed[slug] = candidate
    return renamed


def rename_legacy_slugs(apps, schema_editor):
    McpServer = apps.get_model("tools", "McpServer")
    for old, new in valid_slugs(list(McpServer.objects.values_list("slug", flat=True))).items():
        McpServer.objects.filter(slug=old).update(slug=new)


RECOMPUTE_PREFIXED_NAMES = """
UPDATE tools_tool AS t SET prefixed_name = s.slug || '__' || t.name
FROM tools_mcpserver AS s
WHERE t.server_id = s.id AND t.prefixed_name <> s.slug || '__' || t.name
"""


class Migration(migrations.Migration):

    dependencies = [
        ("tools", "0003_toolcall_no_db_constraint"),
    ]

    operations = [
        migrations.RunPython(rename_legacy_slugs, migrations.RunPython.noop),
        migrations.RunSQL(RECOMPUTE_PREFIXED_NAMES, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="mcpserver",
            name="slug",
            field=models.CharField(
                help_text="Prefix of this server's tool names as the model sees them: <slug>__<tool>.",
                max_length=20,
                unique=True,
                validators=[
                    django.core.validators.RegexValidator(
                        "\\A[a-z][a-z0-9]*(_[a-z0-9]+)*\\Z",
                        "1–20 lowercase letters and digits, starting with a letter; words may be joined by single "
                        "underscores (no “__”, no underscore at the end).",
                    )
                ],
                verbose_name="slug",
            ),
        ),
        migrations.AddConstraint(
            model_name="mcpserver",
            constraint=models.CheckConstraint(
                condition=models.Q(("slug__regex", "\\A[a-z][a-z0-9]*(_[a-z0-9]+)*\\Z")), name="server_slug_snake_case"
            ),
        ),
        migrations.AddConstraint(
            model_name="tool",
            constraint=models.UniqueConstraint(
                condition=models.Q(("removed_in__isnull", True)),
                fields=("prefixed_name",),
                name="tool_unique_live_prefixed_name",
            ),
        ),
    ]
