"""Outbound safety (M2) lives in `tenants.outbound` (tenant settings need it too, and `tenants`
imports nothing of `tools`); this name stays for the tools half's callers."""

from tenants.outbound import LookupTimedOut, OutboundRefused, check_url, refusal_of

__all__ = ["LookupTimedOut", "OutboundRefused", "check_url", "refusal_of"]
