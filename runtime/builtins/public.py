"""Public sources (R13): `asixto__web_search` and `asixto__read_page`, on together when the
tenant's switch is on (`Tenant.public_sources`, a T6 setting), off by default. What they return is marked
public: the turn labels those facts (TurnStep.response["source"] = "public", and the fact's
source in the reply request).

Search asks the tenant's backend (`Tenant.search_url`), else the operator's (ASIXTO_SEARCH_URL):
`GET <url>?q=…` answering `{"results": [{"title", "url", "snippet"}]}`. Page reading fetches one page through the pinned
outbound client (M2: resolve, then check every address; private, loopback, link-local and
metadata addresses refused unless the operator allows them), follows no redirect, reads at most
ASIXTO_PAGE_MAX_BYTES within ASIXTO_PAGE_TIMEOUT seconds, and keeps the text of HTML only."""

import json
import time
from html.parser import HTMLParser

import httpx
from django.conf import settings
from django.utils.translation import gettext as _

from runtime.builtins.registry import BuiltinTool, Refusal, Result, definition, reasons, register
from tenants.outbound import OutboundRefused, check_url, refusal_of
from tenants.outbound_http import outbound_client
from tenants.selectors import current_tenant

MAX_RESULTS = 5
MAX_SEARCH_BYTES = 200_000
SKIPPED_TAGS = {"script", "style", "noscript", "template", "svg", "head"}
BLOCK_TAGS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "title"}


class _Text(HTMLParser):
    """The readable text of an HTML page: no scripts, styles or markup."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skipping = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in SKIPPED_TAGS:
            self.skipping += 1
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in SKIPPED_TAGS and self.skipping:
            self.skipping -= 1

    def handle_data(self, data):
        if not self.skipping:
            self.parts.append(data)


def page_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def _get(url: str, *, params=None, max_bytes: int, purpose: str | None) -> tuple[int, str, bytes, str | None]:
    """GET through the outbound client, bounded; returns (status, content type, body, encoding).
    `purpose` "search" lets the tenant's approvals for its search backend apply; a page a customer
    or the model names (`purpose` None) gets none of them, only the operator's setting (issue 19, M2)."""
    try:
        check_url(url, tenant=current_tenant(), purpose=purpose)
    except OutboundRefused as refused:
        raise Refusal(_("That address cannot be read: %(reason)s") % {"reason": refused.message})
    body = b""
    deadline = time.monotonic() + settings.ASIXTO_PAGE_TIMEOUT  # a server dripping bytes stops here too
    try:
        # A page a customer or the model names is no server of ours: it is not sent the turn's trace context
        # (the httpx instrumentation would add a traceparent to any host), only the search backend is.
        with outbound_client(purpose=purpose, timeout=settings.ASIXTO_PAGE_TIMEOUT, http_spans=purpose is not None) as client:
            with client.stream("GET", url, params=params, headers={"Accept": "text/html, text/plain, application/json"}) as response:
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) >= max_bytes or time.monotonic() > deadline:
                        body = body[:max_bytes]
                        break
                return response.status_code, response.headers.get("content-type", ""), body, response.encoding
    except httpx.HTTPError as error:
        refused = refusal_of(error)
        if refused is not None:
            raise Refusal(_("That address cannot be read: %(reason)s") % {"reason": refused.message})
        raise Refusal(_("The page could not be read (%(error)s). Answer without it.") % {"error": type(error).__name__})


def _search(arguments, context) -> Result:
    backend = current_tenant().search_url or settings.ASIXTO_SEARCH_URL
    if not backend:
        raise Refusal(_("Web search is not configured. Answer without it."))
    status, _type, body, _encoding = _get(backend, params={"q": arguments["query"]}, max_bytes=MAX_SEARCH_BYTES, purpose="search")
    try:
        found = json.loads(body) if status == 200 else None
        results = [{"title": str(item.get("title", ""))[:200], "url": str(item.get("url", ""))[:500],
                    "snippet": str(item.get("snippet", ""))[:500]}
                   for item in found["results"][:MAX_RESULTS] if isinstance(item, dict)]
    except (ValueError, TypeError, KeyError):
        raise Refusal(_("Web search did not answer. Answer without it."))
    text = "\n".join(f"{r['title']} — {r['url']}\n{r['snippet']}" for r in results) or _("Nothing found.")
    return Result({"results": results}, text=text, public=True)


def _read(arguments, context) -> Result:
    url = arguments["url"]
    if not url.startswith(("https://", "http://")):
        raise Refusal(_("Only http and https addresses can be read."))
    status, content_type, body, encoding = _get(url, max_bytes=settings.ASIXTO_PAGE_MAX_BYTES, purpose=None)
    if 300 <= status < 400:
        raise Refusal(_("The page moved elsewhere; redirects are not followed. Answer without it."))
    if status != 200:
        raise Refusal(_("The page answered with HTTP %(status)d. Answer without it.") % {"status": status})
    text = body.decode(encoding or "utf-8", errors="replace")
    if "html" in content_type or not content_type:
        text = page_text(text)
    elif not content_type.startswith("text/"):
        raise Refusal(_("That address is not a text page. Answer without it."))
    return Result({"url": url, "chars": len(text)}, text=text, public=True)


register(BuiltinTool(
    definition(
        name="web_search", title="Search the web",
        description="Searches the public web. Its results are public sources, not the company's data.",
        properties={"query": {"type": "string", "minLength": 1, "maxLength": 300}}, required=["query"],
        output={"properties": {"results": {"type": "array"}}, "required": ["results"]},
        verb="search the web", capabilities=["builtin", "public"], read_only=True, open_world=True),
    run=_search, public=True,
    reasons=reasons(r"\bbusca(r|lo|la)? en (internet|la web|google)\b", r"\ben internet\b", r"\bsearch (the )?(web|internet|online)\b",
                    r"\bgoogle(a|alo)?\b", r"\bweb search\b", r"\bonline\b", r"\bnoticias\b", r"\bnews\b"),
))

register(BuiltinTool(
    definition(
        name="read_page", title="Read a web page",
        description="Reads the text of one public web page. What it says is a public source, not the company's data.",
        properties={"url": {"type": "string", "minLength": 8, "maxLength": 2000}}, required=["url"],
        output={"properties": {"url": {"type": "string"}, "chars": {"type": "integer"}}, "required": ["url"]},
        verb="read a web page", capabilities=["builtin", "public"], read_only=True, open_world=True),
    run=_read, public=True,
    reasons=reasons(r"https?://\S+", r"\bwww\.\S+", r"\b(lee|leer|revisa|abre) (esta|la|el) (pagina|enlace|link|web)\b",
                    r"\bread (this|the) (page|link|article)\b"),
))
