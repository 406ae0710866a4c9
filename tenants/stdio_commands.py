"""Operator-approved stdio commands (M3, issue 8): what an approval may say, what a tenant may set
on a server of it, and the one place where approvals are created, changed and disabled (the
management commands and the operator API go through here; the Django admin through the model's
`clean_fields`, which applies the same rules).

An approval fixes the program, its arguments and part of its environment (`fixed_env`); values
there and in the arguments may hold `{workdir}`, the server's private persistent directory. It
also declares the variables a tenant may set (`tenant_vars`), each plain or secret. A tenant can
set only declared names, never one the operator fixed, and never one that changes what a program
runs, loads or connects to (`UNSAFE_NAMES`, `UNSAFE_PREFIXES`: shells, Python, Node/npm, Java,
Git, OpenSSL, proxies, locale loaders…), even if an operator declared it by mistake; a tenant's
names are upper case (`TENANT_NAME`).
"""

import re

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from asixto.errors import ApplicationError
from tenants.models import ApprovedCommand

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")  # a name an operator may fix
TENANT_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,127}")  # a name a tenant may be allowed to set
MAX_VARS = 50
MAX_ARGS = 50
MAX_VALUE_CHARS = 4000
WORKDIR = "{workdir}"
# What a tenant may set is an allow-list (issue 19, H1): a name the operator declared, of the form
# TENANT_NAME, and none of the names below, which common runtimes read to decide what code runs,
# which options, configuration or libraries they load, or where they connect. The operator's
# declaration is refused for them too; the launch drops them from an approval made before a name
# joined this list.
UNSAFE_NAMES = frozenset({
    # shells and the C library
    "PATH", "HOME", "SHELL", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS1", "PS2", "PS3", "PS4",
    "PROMPT_COMMAND", "CDPATH", "GLOBIGNORE", "FPATH", "ZDOTDIR", "HISTFILE", "TMPDIR", "TMP", "TEMP", "EDITOR",
    "VISUAL", "PAGER", "MANPAGER", "BROWSER", "LESSOPEN", "LESSCLOSE", "SUDO_ASKPASS", "SSH_ASKPASS",
    "SSH_AUTH_SOCK", "TERMINFO", "TERMINFO_DIRS", "HOSTALIASES", "RES_OPTIONS", "LOCALDOMAIN", "RESOLV_HOST_CONF",
    "TZDIR", "LOCPATH", "NLSPATH", "GCONV_PATH", "LANG", "LANGUAGE", "LC_ALL", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS",
    "XDG_DATA_HOME", "XDG_DATA_DIRS", "XDG_RUNTIME_DIR", "GNUPGHOME", "KUBECONFIG", "DOCKER_HOST", "DOCKER_CONFIG",
    # interpreters and their package managers
    "VIRTUAL_ENV", "CONDA_PREFIX", "PERLLIB", "RUBYOPT", "RUBYLIB", "CLASSPATH", "JAVA_HOME", "JAVA_OPTS",
    "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "PHPRC", "PHP_INI_SCAN_DIR", "GOFLAGS", "GOROOT", "GOPATH", "GOPROXY",
    "GOTOOLCHAIN", "GOENV", "GODEBUG", "GOEXPERIMENT", "GOINSECURE", "GONOSUMDB", "GONOSUMCHECK", "GOPRIVATE",
    "RUSTFLAGS", "RUSTC", "RUSTC_WRAPPER", "RUSTUP_HOME", "LUA_PATH", "LUA_CPATH", "LUA_INIT", "TCLLIBPATH",
    "R_HOME", "R_LIBS", "R_PROFILE", "R_ENVIRON", "ERL_FLAGS", "ERL_LIBS", "ERL_AFLAGS", "ERL_ZFLAGS",
    "ELIXIR_ERL_OPTIONS",
    # TLS and proxies: where a program connects and whom it trusts
    "OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES", "SSL_CERT_FILE", "SSL_CERT_DIR", "SSLKEYLOGFILE",
    "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "CURL_HOME", "WGETRC", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
    "NO_PROXY", "FTP_PROXY", "GRPC_PROXY", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE", "GOOGLE_APPLICATION_CREDENTIALS", "BOTO_CONFIG",
})
UNSAFE_PREFIXES = (
    "LD_", "DYLD_", "MALLOC_", "GLIBC_", "BASH_FUNC_", "PYTHON", "PIP_", "UV_", "CONDA_", "NODE_", "NPM_CONFIG_",
    "YARN_", "PNPM_", "COREPACK_", "BUN_", "DENO_", "PERL", "GEM_", "BUNDLE_", "JAVA_", "JDK_", "MAVEN_", "GRADLE_",
    "GIT_", "CGO_", "CARGO_", "DOTNET_", "COMPLUS_", "CORECLR_", "LC_", "OPENSSL_", "GCONV_", "XDG_", "SYSTEMD_",
    "DBUS_", "LIBVA_", "GTK_", "QT_", "ELECTRON_", "CHROME_", "PLAYWRIGHT_", "PUPPETEER_",
)


def is_unsafe_name(name: str) -> bool:
    """True unless a tenant may be allowed to set `name` (then the approval must still declare it)."""
    return (not isinstance(name, str) or not TENANT_NAME.fullmatch(name) or name in UNSAFE_NAMES
            or name.startswith(UNSAFE_PREFIXES))


def value_problem(name: str, value) -> str | None:
    """Why `value` cannot be an environment value or argument, or None. No NUL (exec would cut
    it), no lone surrogate (not encodable), bounded."""
    if not isinstance(value, str):
        return _("The value of %(name)s must be text.") % {"name": name}
    if "\x00" in value or len(value) > MAX_VALUE_CHARS:
        return _("The value of %(name)s must be at most %(size)d characters, without NUL.") % {
            "name": name, "size": MAX_VALUE_CHARS}
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _("The value of %(name)s is not valid text.") % {"name": name}
    return None


def _shown(name) -> str:
    # Echoed in an error message: printable, short.
    return re.sub(r"[^\x20-\x7e]", "?", str(name))[:100]


def command_problems(command: ApprovedCommand) -> dict[str, list[str]]:
    """field → problems of an approval; {} when it is fine."""
    problems: dict[str, list[str]] = {}

    def add(field, message):
        problems.setdefault(field, []).append(message)

    if not command.executable.startswith("/") or "\x00" in command.executable:
        add("executable", _("Give the absolute path of the program."))
    args = command.base_args
    if not isinstance(args, list) or len(args) > MAX_ARGS:
        add("base_args", _("A list of at most %(count)d arguments.") % {"count": MAX_ARGS})
    else:
        for position, arg in enumerate(args, start=1):
            if problem := value_problem(_("argument %(number)d") % {"number": position}, arg):
                add("base_args", problem)
    fixed = command.fixed_env
    if not isinstance(fixed, dict) or len(fixed) > MAX_VARS:
        add("fixed_env", _("An object of at most %(count)d variables, NAME → value.") % {"count": MAX_VARS})
        fixed = {}
    for name, value in fixed.items():
        if not ENV_NAME.fullmatch(name):
            add("fixed_env", _("Not a valid variable name: %(name)s") % {"name": _shown(name)})
        elif problem := value_problem(name, value):
            add("fixed_env", problem)
    declared = command.tenant_vars
    if not isinstance(declared, list) or len(declared) > MAX_VARS:
        add("tenant_vars", _("A list of at most %(count)d variables.") % {"count": MAX_VARS})
        declared = []
    seen = set()
    for entry in declared:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not ENV_NAME.fullmatch(name) or set(entry) - {"name", "secret", "description"}:
            add("tenant_vars", _('Each variable is {"name": NAME, "secret": true or false}: %(entry)s') % {
                "entry": _shown(entry)})
        elif not isinstance(entry.get("secret", False), bool) or not isinstance(entry.get("description", ""), str):
            add("tenant_vars", _('Each variable is {"name": NAME, "secret": true or false}: %(entry)s') % {
                "entry": _shown(entry)})
        elif name in seen:
            add("tenant_vars", _("This variable is listed twice: %(name)s") % {"name": name})
        elif name in fixed:
            add("tenant_vars", _("%(name)s has a fixed value; tenants cannot set it.") % {"name": name})
        elif not TENANT_NAME.fullmatch(name):
            add("tenant_vars", _("A variable tenants set is named in capitals, digits and _: %(name)s") % {"name": name})
        elif is_unsafe_name(name):
            add("tenant_vars", _("%(name)s decides which code runs; tenants cannot set it.") % {"name": name})
        if isinstance(name, str):  # a list or an object as a name is reported above, never hashed (a 500)
            seen.add(name)
    return problems


def tenant_env_problems(command: ApprovedCommand, values: dict) -> list[str]:
    """What is wrong with the variables a tenant gives for a server of `command` (name → value,
    or None to unset it); [] when fine."""
    declared = command.declared_vars
    problems = []
    for name, value in values.items():
        if name not in declared:
            if declared:
                problems.append(_("%(name)s is not a variable of this command; it takes %(names)s.") % {
                    "name": _shown(name), "names": ", ".join(sorted(declared))})
            else:
                problems.append(_("%(name)s is not a variable of this command; it takes none.") % {"name": _shown(name)})
        elif value is not None and (problem := value_problem(name, value)):
            problems.append(problem)
    return problems


FIELDS = ("description", "executable", "base_args", "allow_extra_args", "fixed_env", "tenant_vars", "enabled")


def _saved(command: ApprovedCommand) -> ApprovedCommand:
    try:
        command.full_clean()
    except ValidationError as exc:
        fields = {field: [str(message) for message in messages] for field, messages in exc.message_dict.items()}
        raise ApplicationError(_("This command cannot be approved as given."), fields=fields) from exc
    command.save()
    return command


def approved_command_create(*, slug: str, **data) -> ApprovedCommand:
    """Approve a command (M3). Raises ApplicationError when the slug is taken or a rule breaks."""
    if ApprovedCommand.objects.filter(slug=slug).exists():
        raise ApplicationError(_("A command with this slug is already approved."), fields={"slug": [_("Taken.")]},
                               code="conflict", status_code=409)
    return _saved(ApprovedCommand(slug=slug, **{key: data[key] for key in FIELDS if key in data}))


@transaction.atomic
def approved_command_update(*, command: ApprovedCommand, data: dict) -> ApprovedCommand:
    """Change an approval. Servers pick the change up on their next launch; a variable no
    longer declared is no longer passed (its stored value stays, unused)."""
    for key in FIELDS:
        if key in data:
            setattr(command, key, data[key])
    return _saved(command)


def approved_command_disable(*, command: ApprovedCommand) -> ApprovedCommand:
    """Stop every server of this command from launching (they fail with a clear error)."""
    command.enabled = False
    command.save(update_fields=["enabled"])
    return command
