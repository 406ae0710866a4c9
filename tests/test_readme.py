"""The README is the newcomer's map (A2): every variable the settings and scripts read is in its
configuration tables, and nothing it points to lies outside the repository."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
# Read by Django or the shell itself, not ours to document.
STANDARD = {"DJANGO_SETTINGS_MODULE", "PATH", "HOME", "PWD"}
PYTHON_READ = re.compile(
    r"""(?:os\.environ(?:\.get|\.setdefault|\.pop)?\(|os\.environ\[|\benv(?:bool|int|list|float)\()\s*["']([A-Z][A-Z0-9_]+)["']"""
)
SHELL_READ = re.compile(r"\$\{([A-Z][A-Z0-9_]+)(?::?-)")


def variables_read():
    found = {}
    python_files = [*(ROOT / "asixto").rglob("*.py"), *(ROOT / "bin").glob("*.py"), ROOT / "tests" / "settings.py"]
    shell_files = [ROOT / "run", ROOT / "run-tests", ROOT / "manage", *(ROOT / "bin").glob("*.sh")]
    for path in python_files:
        for name in PYTHON_READ.findall(path.read_text()):
            found.setdefault(name, path.relative_to(ROOT))
    for path in shell_files:
        if path.exists():
            for name in SHELL_READ.findall(path.read_text()):
                found.setdefault(name, path.relative_to(ROOT))
    return {name: where for name, where in found.items() if name not in STANDARD}


def test_it_lists_every_variable_the_settings_and_scripts_read():
    """A2: a variable read somewhere but missing from the README is a setting nobody can find."""
    found = variables_read()
    assert {"PORT", "EXAMPLE_PORT", "ASIXTO_DATABASE", "CELERY_CONCURRENCY", "ASIXTO_TEST_DATABASE", "EMAIL_HOST"} <= set(found)
    missing = {name: str(where) for name, where in found.items() if f"`{name}`" not in README}
    assert not missing, f"document these in README.md's configuration tables: {missing}"


def test_it_points_only_inside_the_repository():
    """A2: no reference to a file outside the repository, and every linked or named path exists."""
    assert "../" not in re.sub(r"\.\.\./", "", README), "a path that leaves the repository"
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), target
    for path in ("docs/SPEC.md", "docs/README.md", "manage"):
        assert f"{path}" in README and (ROOT / path).exists(), path
    docs = (ROOT / "docs" / "README.md").read_text()
    for target in re.findall(r"\]\(([^)#]+)\)", docs):
        assert (ROOT / "docs" / target).exists(), target
