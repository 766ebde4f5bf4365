"""Keep credentials out of everything compensation stores or prints: ledger ``last_error`` and ``result``,
logs, command output and exception messages.

Two layers: every text goes through the generic patterns (the userinfo of a URL, the value after a known secret
header name), and a handler that knows its own secrets (a connection's password, its configured headers) also
replaces those literally, so a receiver echoing a header back in its error body cannot leak it either.
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from collections.abc import Iterable

MASK = "***"
# Headers whose value is a credential whatever the deployment (compared case-insensitively).
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "cookie", "set-cookie"})

# scheme://userinfo@ : everything between "://" and the last "@" before the host's end.
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/?#\s@'\"]+)@")
# "Authorization: Basic abc", "'X-Api-Key': 'abc'", "cookie=abc" as they appear in error texts and dict reprs.
_HEADER_VALUE = re.compile(
    # the longer names first, so that "proxy-authorization" is not read as "authorization"
    rf"(?P<name>\b(?:{'|'.join(sorted(SECRET_HEADERS, key=len, reverse=True))})\b['\"]?\s*[:=]\s*['\"]?)"
    r"(?P<value>(?:(?:basic|bearer|token|digest)\s+)?[^\s'\",;}]+)",
    re.IGNORECASE,
)
# Literal secrets shorter than this are not replaced: masking every "a" in a message would hide the message.
_MIN_SECRET = 3


def redact(text: str | None, secrets: Iterable[str] = ()) -> str | None:
    """``text`` with URL userinfo, known secret header values and the given literal ``secrets`` masked."""
    if text is None:
        return None
    out = _USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", text)
    out = _HEADER_VALUE.sub(lambda m: m.group("name") + MASK, out)
    for secret in sorted({s for s in secrets if s and len(s) >= _MIN_SECRET}, key=len, reverse=True):
        out = out.replace(secret, MASK)
    return out


def redact_url(url: str) -> str:
    """The URL without its userinfo (``http://user:pw@host/x`` -> ``http://***@host/x``)."""
    return redact(url) or ""


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """(the URL without userinfo, (user, password) or None). The credentials then travel as basic auth, so
    the HTTP client never holds a URL it could log with a password in it."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    clean = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    return clean, (user, password)


def secret_variants(*values: str | None) -> set[str]:
    """Each secret as it may show up in a text: itself, URL-encoded, and (for a user:password pair passed as
    one string) base64 as in a basic ``Authorization`` header."""
    out: set[str] = set()
    for value in values:
        if not value:
            continue
        out |= {value, urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)}
    return out


def basic_auth_secrets(user: str, password: str) -> set[str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return secret_variants(password, token)
