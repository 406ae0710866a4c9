"""Detection and removal of tokens, traces and internal identifiers in results (C8, G7)."""

import json

import pytest

from tools.rules.leaks import INTERNAL_ID, TOKEN, TRACE, clean_data, clean_text

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


@pytest.mark.parametrize(
    "secret_text, secret, label",
    [
        ("Authorization: Bearer abcDEF1234567890xyz", "abcDEF1234567890xyz", "bearer token"),
        (f"sesión {JWT} activa", JWT, "JWT"),
        ("clave sk-proj-abcdefghijklmnopqrstuvwxyz123456 usada", "sk-proj-abcdefghijklmnopqrstuvwxyz123456", "API key"),
        ("aws AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "API key"),
        ("repo ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "API key"),
        ("db postgres://admin:s3cretPass@db.interno:5432/app", "s3cretPass", "credentials in URL"),
        ('{"api_key": "abcd1234efgh"}', "abcd1234efgh", "credential"),
        ("password=hunter22 listo", "hunter22", "credential"),
        ("contraseña: Clave2024", "Clave2024", "credential"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA", "private key"),
    ],
)
def test_it_removes_tokens_and_secrets(secret_text, secret, label):
    """G7, C8: tokens found in a result are removed and reported."""
    cleaned = clean_text(f"Caso abierto. {secret_text} Gracias.")

    assert secret not in cleaned.value
    assert cleaned.value.startswith("Caso abierto. ") and cleaned.value.endswith(" Gracias.")
    assert [(leak.kind, leak.label) for leak in cleaned.leaks] == [(TOKEN, label)]


@pytest.mark.parametrize(
    "trace, label",
    [
        ('Traceback (most recent call last):\n  File "/srv/app.py", line 3, in abrir\n    caso()\nKeyError: \'x\'\n', "Python traceback"),
        ("java.lang.NullPointerException: boom\n\tat com.acme.Casos.abrir(Casos.java:42)\n\tat com.acme.Main.main(Main.java:10)\n", "stack trace"),
        ("TypeError: x is undefined\n    at abrir (/app/src/casos.js:10:15)\n    at node:internal/process/task_queues:95:5\n", "stack trace"),
        ("System.NullReferenceException: nada\n   at Acme.Casos.Abrir() in C:\\src\\Casos.cs:line 42\n", "stack trace"),
        ("SQLSTATE[23505]: Unique violation: duplicate key\n", "database error"),
    ],
)
def test_it_removes_stack_traces_and_keeps_the_text_around_them(trace, label):
    """G7, C8: Python, Java, JavaScript and .NET traces and database errors never reach the model."""
    cleaned = clean_text(f"No se pudo abrir el caso.\n{trace}Intenta de nuevo.")

    assert cleaned.value == "No se pudo abrir el caso.\n[trace removed]\nIntenta de nuevo."
    assert {(leak.kind, leak.label) for leak in cleaned.leaks} == {(TRACE, label)}


def test_it_removes_internal_identifiers_from_json_text():
    """G7, C8: ids in id-like keys go; customer references stay."""
    text = json.dumps(
        {
            "id": 4812,
            "cliente_id": "b3c1a8e2-1f4a-4c2e-9d7b-2a6f0e1c9b11",
            "internal_code": "X1",
            "customerId": "cus_9f2a7c3b11",
            "radicado": "RAD-2024-001",
            "pedido_id": "PED-0012",
            "next_page_token": "abcdef1234",
        }
    )

    cleaned = clean_text(text)
    data = json.loads(cleaned.value)

    assert [data[k] for k in ("id", "cliente_id", "internal_code", "customerId")] == ["[id removed]"] * 4
    assert (data["radicado"], data["pedido_id"], data["next_page_token"]) == ("RAD-2024-001", "PED-0012", "abcdef1234")
    assert {leak.kind for leak in cleaned.leaks} == {INTERNAL_ID} and len(cleaned.leaks) == 4


def test_it_removes_uuids_from_free_text():
    """G7: a UUID means nothing to a customer who hears it read aloud."""
    cleaned = clean_text("Su caso 3f2a7c1e-0b4d-4e8a-9c6f-1d2e3f4a5b6c quedó abierto.")

    assert cleaned.value == "Su caso [id removed] quedó abierto."
    assert [leak.label for leak in cleaned.leaks] == ["UUID"]


@pytest.mark.parametrize(
    "text",
    [
        "El plan cuesta $ 89.900 y atendemos de 8 a.m. a 5 p.m.",
        "Nos vemos a las 10:30 en la sede; at 10:30 we meet at the office.",
        "Usa la palabra clave: zapatos rojos",
        "max_tokens: 100000",
        "Documentación en https://ayuda.example.com:8443/casos?id=12",
        "Radicado RAD-2024-0012, pedido PED-0012, documento CC1032456789.",
        "Error: el documento no existe. Verifica el número.",
    ],
)
def test_it_leaves_ordinary_text_alone(text):
    """G7: prices, times, URLs, references and plain error messages are not leaks."""
    cleaned = clean_text(text)

    assert (cleaned.value, cleaned.leaks) == (text, ())


def test_it_drops_secret_and_internal_fields_from_structured_data_without_touching_the_input():
    """G7, C8: structuredContent loses id-like and secret fields; strings are cleaned like text."""
    data = {
        "items": [{"id": 7, "nombre": "Zapato", "sku": "Z-1", "access_token": "abc123456789"}],
        "nota": f"sesión {JWT}",
        "next_page_token": "p2",
        "total": 1,
    }
    before = json.dumps(data)

    cleaned = clean_data(data, where="structuredContent")

    assert cleaned.value == {"items": [{"nombre": "Zapato", "sku": "Z-1"}], "nota": "sesión [redacted]", "next_page_token": "p2", "total": 1}
    assert [(leak.kind, leak.where) for leak in cleaned.leaks] == [
        (INTERNAL_ID, "structuredContent/items/0/id"),
        (TOKEN, "structuredContent/items/0/access_token"),
        (TOKEN, "structuredContent/nota"),
    ]
    assert json.dumps(data) == before


def test_it_never_keeps_the_leaked_value_in_what_it_reports():
    """G7, G9: recording a leak must not copy the secret."""
    cleaned = clean_text(f"token {JWT}")

    assert all(JWT not in str(value) for leak in cleaned.leaks for value in vars(leak).values())
