"""The demo's model endpoint (T6, T7): `./run` (through `demo_setup`) points the demo tenant at
ASIXTO_MODEL_URL / ASIXTO_MODEL_NAME / ASIXTO_MODEL_KEY when they are set, and says clearly how
to set them when they are not."""

import io

import pytest
from django.core.management import CommandError, call_command

from tenants.models import Tenant


@pytest.fixture
def model_env(monkeypatch):
    for name in ("ASIXTO_MODEL_URL", "ASIXTO_MODEL_NAME", "ASIXTO_MODEL_KEY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def demo_setup():
    out = io.StringIO()
    call_command("demo_setup", "--port", "8000", stdout=out)
    return out.getvalue()


def test_it_points_the_demo_agent_at_the_model_from_the_environment(db, worlds, model_env):
    """T6, T7: URL, name and key are stored (the key encrypted) and the output names the model,
    never the key; a later run without a key clears the old one rather than send it elsewhere."""
    model_env.setenv("ASIXTO_MODEL_URL", "http://127.0.0.1:11434/v1")
    model_env.setenv("ASIXTO_MODEL_NAME", "qwen2.5:7b-instruct")
    model_env.setenv("ASIXTO_MODEL_KEY", "sk-demo-secret-1234")
    out = demo_setup()
    tenant = Tenant.objects.get(slug="demo")
    assert (tenant.model_base_url, tenant.model_name, tenant.model_api_key) == (
        "http://127.0.0.1:11434/v1", "qwen2.5:7b-instruct", "sk-demo-secret-1234")
    assert "qwen2.5:7b-instruct at http://127.0.0.1:11434/v1" in out and "sk-demo-secret-1234" not in out
    assert "/playground/" in out
    model_env.setenv("ASIXTO_MODEL_URL", "https://models.example.com/v1")
    model_env.delenv("ASIXTO_MODEL_KEY")
    demo_setup()
    tenant.refresh_from_db()
    assert (tenant.model_base_url, tenant.model_api_key) == ("https://models.example.com/v1", "")


def test_it_says_how_to_set_a_model_when_there_is_none(db, worlds, model_env):
    """T6: no variables and no model in the settings: the output shows the variables to set."""
    out = demo_setup()
    assert "ASIXTO_MODEL_URL=" in out and "ASIXTO_MODEL_NAME=" in out and "ASIXTO_MODEL_KEY" in out
    assert Tenant.objects.get(slug="demo").model_base_url == ""


def test_without_variables_it_keeps_the_model_set_in_the_dashboard(db, worlds, model_env):
    """T6: a model chosen under Agent settings survives ./run."""
    demo_setup()
    Tenant.objects.filter(slug="demo").update(model_base_url="https://models.example.com/v1", model_name="m1")
    out = demo_setup()
    assert "m1 at https://models.example.com/v1 (from the agent settings)" in out and "ASIXTO_MODEL_URL=" not in out


@pytest.mark.parametrize("url, name, message", [
    ("http://127.0.0.1:11434/v1", "", "ASIXTO_MODEL_NAME"),
    ("", "qwen", "ASIXTO_MODEL_URL"),
    ("localhost:11434", "qwen", r"not an http\(s\) URL"),
])
def test_half_a_configuration_is_a_clear_error(db, worlds, model_env, url, name, message):
    """A4: a URL without a model name, a name without a URL, or a URL that is not one."""
    if url:
        model_env.setenv("ASIXTO_MODEL_URL", url)
    if name:
        model_env.setenv("ASIXTO_MODEL_NAME", name)
    with pytest.raises(CommandError, match=message):
        demo_setup()


def test_it_speaks_one_language_and_its_hints_work(db, worlds, model_env, settings):
    """Issue 20, M2: `./run`'s output and its errors are English whatever the interface
    default; a refused private example server names the operator's exact command; the operators' hint
    is `./manage createsuperuser` (a bare `python manage.py` has no venv)."""
    settings.ASIXTO_ALLOW_PRIVATE_HOSTS = False
    settings.LANGUAGE_CODE = "es"
    assert "(./manage createsuperuser)" in demo_setup()
    with pytest.raises(CommandError) as refused:
        call_command("demo_example_server", "http://10.0.5.20:8123/mcp", stdout=io.StringIO())
    message = str(refused.value)
    assert "does not resolve to a public address" in message and "no resuelve" not in message
    assert "./manage private_host_approve 10.0.5.20 --tenant demo --port 8123 --for mcp --allow-http" in message
