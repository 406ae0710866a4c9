"""The support desk behind the example server: cases and a product catalog, in memory.

Plain Python with no MCP in it, so the business rules (idempotent case opening, accent-
insensitive product search) read on their own. State lives for the life of one `SupportDesk`
instance; the server builds one per process.
"""

from __future__ import annotations

import threading
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DEFAULT_TIMEZONE = "America/Bogota"

# Response time promised per case type, in hours. High priority cuts it to a working day.
SLA_HOURS = {"falla": 24, "instalacion": 48, "cobro": 72}
HIGH_PRIORITY_SLA_HOURS = 8

CASE_TYPE_NAMES = {"falla": "Falla técnica", "instalacion": "Instalación", "cobro": "Cobro"}
PRIORITY_NAMES = {"alta": "Alta", "normal": "Normal"}

_MONTHS = (
    "enero", "febrero", "marzo", "abril", "mayo", "junio",
    "julio", "agosto", "septiembre", "octubre", "noviembre", "diciembre",
)  # fmt: skip


class IdempotencyConflict(Exception):
    """The idempotency key was already used for a case with different data."""


@dataclass(frozen=True)
class Case:
    radicado: str
    documento: str
    tipo: str
    descripcion: str
    prioridad: str
    estado: str
    sla_horas: int
    opened_at: datetime


@dataclass(frozen=True)
class Product:
    nombre: str
    precio_cop: int
    disponibilidad: str

    @property
    def available(self) -> bool:
        return self.disponibilidad != "agotado"


# Final prices in COP (taxes included): what a customer pays, so nothing is left to compute.
PRODUCTS: tuple[Product, ...] = (
    Product("Router WiFi 6 doble banda", 189_900, "disponible"),
    Product("Repetidor WiFi de largo alcance", 89_900, "disponible"),
    Product("Módem de fibra óptica", 249_900, "últimas unidades"),
    Product("Decodificador de televisión HD", 159_900, "disponible"),
    Product("Control remoto universal", 39_900, "disponible"),
    Product("Cable de red categoría 6 de 5 metros", 24_900, "disponible"),
    Product("Adaptador de red por la corriente eléctrica (par)", 219_900, "agotado"),
    Product("Cámara de seguridad WiFi para interiores", 179_900, "disponible"),
    Product("Teléfono fijo inalámbrico", 129_900, "bajo pedido, llega en 5 días hábiles"),
    Product("Fuente de poder de 12 V para módem", 49_900, "disponible"),
    Product("Antena de televisión digital para exteriores", 99_900, "últimas unidades"),
    Product("Cargador USB-C de 20 W", 59_900, "agotado"),
)


def format_price(amount_cop: int) -> str:
    """`89900` -> `"$ 89.900"`: Colombian thousands separator, ready to be read aloud."""
    return "$ " + f"{amount_cop:,}".replace(",", ".")


def format_datetime(moment: datetime, timezone_name: str | None) -> str:
    """A full Spanish date in the caller's timezone, e.g. `"30 de noviembre de 2026, 14:05"`."""
    local = moment.astimezone(_zone(timezone_name))
    return f"{local.day} de {_MONTHS[local.month - 1]} de {local.year}, {local:%H:%M}"


def _zone(name: str | None) -> timezone | ZoneInfo:
    try:
        return ZoneInfo(name or DEFAULT_TIMEZONE)
    except (ZoneInfoNotFoundError, ValueError):
        # A host without the tz database (slim containers) still answers in Bogotá time,
        # which has had no daylight saving since 1993.
        return timezone(timedelta(hours=-5))


def _normalise(text: str) -> str:
    """Lower case without accents, so "modem" finds "Módem" (customers type both)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


class SupportDesk:
    """Cases and products of one example tenant. Safe to share between threads."""

    def __init__(self, products: tuple[Product, ...] = PRODUCTS) -> None:
        self._products = products
        self._cases: dict[str, Case] = {}
        self._cases_by_key: dict[str, Case] = {}
        self._next_number = 1
        # The ASGI handlers never await while holding it, but a desk may be shared by
        # servers running in different threads (tests), so the check-then-create is locked.
        self._lock = threading.Lock()

    def open_case(
        self,
        *,
        documento: str,
        tipo: str,
        descripcion: str,
        prioridad: str | None,
        idempotency_key: str | None,
    ) -> Case:
        """Open a case, or return the case already opened with this idempotency key.

        The gateway re-sends a call whose connection dropped with the same key; returning the
        first case (instead of opening a second) is what makes that retry safe. Reusing a key
        for different data is a caller bug, reported as `IdempotencyConflict`.
        """
        prioridad = prioridad or "normal"
        with self._lock:
            if idempotency_key is not None and idempotency_key in self._cases_by_key:
                existing = self._cases_by_key[idempotency_key]
                if (existing.documento, existing.tipo, existing.descripcion, existing.prioridad) != (
                    documento,
                    tipo,
                    descripcion,
                    prioridad,
                ):
                    raise IdempotencyConflict(idempotency_key)
                return existing
            radicado = f"SOP-{self._next_number:06d}"
            self._next_number += 1
            high = prioridad == "alta"
            case = Case(
                radicado=radicado,
                documento=documento,
                tipo=tipo,
                descripcion=descripcion,
                prioridad=prioridad,
                # A high-priority case goes straight to a technician; the rest wait in line.
                estado="abierto" if high else "en_cola",
                sla_horas=HIGH_PRIORITY_SLA_HOURS if high else SLA_HOURS[tipo],
                opened_at=datetime.now(timezone.utc),
            )
            self._cases[radicado] = case
            if idempotency_key is not None:
                self._cases_by_key[idempotency_key] = case
            return case

    @property
    def case_count(self) -> int:
        """How many cases exist; a retried call must not make it grow."""
        with self._lock:
            return len(self._cases)

    def find_case(self, radicado: str) -> Case | None:
        # A radicado read back by a customer arrives in any case and with stray spaces.
        with self._lock:
            return self._cases.get(radicado.strip().upper())

    def search_products(
        self, consulta: str, *, solo_disponibles: bool = False, limit: int = 5
    ) -> tuple[list[Product], int]:
        """Products whose name holds every word of the query; returns (first `limit`, total)."""
        words = _normalise(consulta).split()
        if not words:
            return [], 0
        matches = [
            product
            for product in self._products
            if all(word in _normalise(product.nombre) for word in words)
            and (product.available or not solo_disponibles)
        ]
        return matches[:limit], len(matches)
