"""Scraping `/metrics` as Prometheus would, on the platform's own domain, and reading it:

    before = scrape()
    ...                                  # what the test counts
    after = scrape()
    assert after.value("asixto_turns_total", tenant="alpha", status="done") - before.value(...) == 1

Counts are compared as differences: other tests of the session (and earlier processes writing to
the same directory) add to the same totals."""

from __future__ import annotations

from dataclasses import dataclass

from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

PLATFORM_HOST = "localhost"


@dataclass
class Scrape:
    samples: list  # prometheus_client Sample tuples (name, labels, value, …)

    def value(self, name: str, **labels) -> float:
        """The sum of the samples called `name` whose labels include `labels`."""
        return sum(sample.value for sample in self.samples if sample.name == name
                   and all(sample.labels.get(key) == wanted for key, wanted in labels.items()))

    def names(self) -> set[str]:
        return {sample.name for sample in self.samples}

    def delta(self, before: Scrape, name: str, **labels) -> float:
        return self.value(name, **labels) - before.value(name, **labels)


def parse(text: str) -> Scrape:
    return Scrape([sample for family in text_string_to_metric_families(text) for sample in family.samples])


def scrape(*, host: str = PLATFORM_HOST, token: str = "") -> Scrape:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = Client(HTTP_HOST=host, headers=headers).get("/metrics")
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"].startswith("text/plain; version=")
    return parse(response.content.decode())
