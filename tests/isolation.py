"""The API isolation contract every endpoint reuses (T1–T3).

Declare the endpoint and how to make one object in a tenant; the mixin checks that tenant A's
key gets 404 for tenant B's object (and B's own key sees it, so the 404 means isolation, not a
broken endpoint), that no key or a revoked key gets 401, and that a channel key gets 403 on an
admin endpoint."""

from django.db import connection

from tenants.models import ApiKey
from tenants.services import api_key_revoke


class IsolationContract:
    list_url: str = ""  # e.g. "/api/v1/api-keys"; empty when the endpoint has no list
    detail_url: str = ""  # with "{id}", e.g. "/api/v1/api-keys/{id}"
    detail_methods: tuple[str, ...] = ("get",)
    admin_only = True

    def make_object(self, world):
        """Create one object in `world`'s tenant and return its API id."""
        raise NotImplementedError

    def _urls(self, world):
        urls = [self.list_url] if self.list_url else []
        if self.detail_url:
            urls.append(self.detail_url.format(id=self.make_object(world)))
        return urls

    def test_it_answers_404_for_another_tenants_object(self, alpha, beta):
        """T1, T2: A's key asking for B's object gets 404, never the object."""
        if not self.detail_url:
            return self._check_list_holds_only_own_objects(alpha, beta)
        url = self.detail_url.format(id=self.make_object(beta))
        connection.set_schema_to_public()
        assert beta.api().get(url).status_code == 200
        for method in self.detail_methods:
            response = getattr(alpha.api(), method)(url)
            assert response.status_code == 404, (method, url, response.content)
            assert response.json()["error"]["code"] == "not_found"

    def _check_list_holds_only_own_objects(self, alpha, beta):
        own = str(self.make_object(alpha))
        other = str(self.make_object(beta))
        connection.set_schema_to_public()
        body = alpha.api().get(self.list_url).content.decode()
        assert own in body and other not in body

    def test_it_answers_401_without_a_key(self, alpha):
        """T2: no credential, no data."""
        for url in self._urls(alpha):
            response = alpha.api(key="").get(url)
            assert response.status_code == 401, (url, response.content)
            assert response.json()["error"]["code"] == "not_authenticated"

    def test_it_answers_401_for_a_revoked_or_wrong_key(self, alpha):
        """T3: a revoked key stops working at once; a made-up key never works."""
        urls = self._urls(alpha)
        connection.set_schema_to_public()
        api_key_revoke(key=ApiKey.objects.get(prefix=ApiKey.parse_prefix(alpha.admin_key)))
        forged = alpha.channel_key[:-4] + "AAAA"
        for url in urls:
            assert alpha.api().get(url).status_code == 401
            assert alpha.api(key=forged).get(url).status_code == 401

    def test_it_answers_403_to_a_channel_key_on_admin_endpoints(self, alpha):
        """T3: a channel key reaches conversations and turns only."""
        for url in self._urls(alpha):
            response = alpha.api(key=alpha.channel_key).get(url)
            expected = 403 if self.admin_only else 200
            assert response.status_code == expected, (url, response.content)
