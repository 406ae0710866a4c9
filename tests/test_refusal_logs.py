"""An expected refusal (403, 404, 401) is one short warning line in the log at most, never a
traceback (issue 21): refusals are the normal answer to a wrong page or key, and a traceback
for each buries the real errors."""

import logging
import uuid

import pytest


def _refusal_records(caplog, response, status):
    assert response.status_code == status
    return [record for record in caplog.records if record.levelno >= logging.WARNING]


def _assert_short(records):
    assert len(records) <= 1, [record.getMessage() for record in records]
    for record in records:
        assert not record.exc_info and not record.exc_text, record.getMessage()
        assert "\n" not in record.getMessage()


def test_it_logs_a_dashboard_403_without_a_traceback(alpha, caplog):
    """T4, issue 21: support staff on an admin page."""
    client = alpha.dashboard("sam")
    caplog.clear()
    with caplog.at_level(logging.INFO):
        response = client.get("/people/")
    _assert_short(_refusal_records(caplog, response, 403))


def test_it_logs_a_dashboard_404_without_a_traceback(alpha, caplog):
    client = alpha.dashboard("ana")
    caplog.clear()
    with caplog.at_level(logging.INFO):
        response = client.get(f"/servers/{uuid.uuid4()}/versions/")
    _assert_short(_refusal_records(caplog, response, 404))


@pytest.mark.parametrize(("key", "path", "status"), [
    ("channel", "/api/v1/users", 403),   # DRF PermissionDenied
    ("admin", "/api/v1/servers/999999", 404),  # DRF NotFound
    ("", "/api/v1/users", 401),          # DRF NotAuthenticated
])
def test_it_logs_an_api_refusal_without_a_traceback(alpha, caplog, key, path, status):
    """A4, issue 21."""
    client = alpha.api({"channel": alpha.channel_key, "admin": alpha.admin_key, "": ""}[key])
    with caplog.at_level(logging.INFO):
        response = client.get(path)
    _assert_short(_refusal_records(caplog, response, status))
