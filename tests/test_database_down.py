"""While PostgreSQL cannot be reached, a request is answered at once with 503 and Retry-After
and a clear code, never a 500 after a long wait (issue 19). The web server here is a real
gunicorn whose database address has nothing listening."""

import httpx

from tests.support.outbound import closed_port
from tests.support.web_servers import wsgi_server


def test_requests_get_a_503_with_retry_after_while_the_database_is_unreachable(alpha):
    """Issue 19: the API answers its error body with the code `unavailable`; a page answers 503 too."""
    down = f"postgres://postgres@127.0.0.1:{closed_port()}/nowhere"
    with wsgi_server(threads=2, database_url=down) as url:
        api = httpx.get(f"{url}/api/v1/conversations", headers={"Host": alpha.domain, "Authorization": f"Bearer {alpha.channel_key}"},
                        timeout=60)
        page = httpx.get(f"{url}/", headers={"Host": alpha.domain}, timeout=60)
    assert api.status_code == 503 and api.json()["error"]["code"] == "unavailable", api.text[:500]
    assert int(api.headers["retry-after"]) >= 1
    assert page.status_code == 503 and int(page.headers["retry-after"]) >= 1
