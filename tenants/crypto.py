"""Secrets at rest (T7): Fernet encryption with key rotation, and a model field that uses it.

Keys come from ASIXTO_ENCRYPTION_KEYS (newest first); without it one key is derived from
SECRET_KEY so a development install works with zero configuration.
"""

import base64
import functools

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.db import models


@functools.cache
def _fernet():
    keys = list(settings.ASIXTO_ENCRYPTION_KEYS)
    if not keys:
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"asixto-secrets", info=b"fernet").derive(
            settings.SECRET_KEY.encode()
        )
        keys = [base64.urlsafe_b64encode(derived).decode()]
    return MultiFernet([Fernet(key) for key in keys])


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise ValueError("secret cannot be decrypted with the configured keys") from exc


class EncryptedTextField(models.TextField):
    """Stores `encrypt(value)`; Python code sees the plaintext. Empty string means "not set"."""

    def from_db_value(self, value, expression, connection):
        if not value:
            return value
        return decrypt(value)

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if not value:
            return value or ""
        return encrypt(value)
