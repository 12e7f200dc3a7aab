"""Server URLs read one way: the form RAG Lab accepts, where a request will go, and how a URL is shown.

A URL is checked here and used by a client that parses it again (qdrant-client with urllib3, the embedders
and the LLM with httpx), and parsers disagree on odd URLs: `http://a:1\\@b:2` is host a to urllib3 and host b
to urllib.parse and httpx; `a%2eb` is "a.b" to urllib3 only; `http://a:1//b:2` makes qdrant-client call b.
So a server URL must be plain, or it is refused (`url_problem` says why):

    http(s)://[user[:password]@]host[:port][/path]

host: letters, digits, '-', '.', '_', or an [IPv6] literal; port 1-65535; path: segments of unreserved
characters, sub-delimiters, ':', '@' and %XX, none of them empty, '.' or '..'; one '@' at most before the
host; no query, no fragment, nothing outside printable ASCII (no backslash, space, tab or newline). On top of
that form urllib.parse, urllib3 and httpx must read the same scheme, host and port, or the URL is refused.

`endpoint(url, default_port)` is where a request goes (scheme, host, port, path), compared by
rag.settings.same_url before a key is attached. `display_url` shows a URL without its user:password;
`redact_urls` does that to every URL inside a text (a message, an exception's text).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import httpx

_PCT = r"%[0-9A-Fa-f]{2}"
_USERINFO = rf"(?:[A-Za-z0-9\-._~!$&'()*+,;=:]|{_PCT})*"
_HOST = r"[A-Za-z0-9\-._]+|\[[0-9A-Fa-f:.]+\]"
_SEGMENT = rf"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|{_PCT})+"
_FORM = re.compile(
    rf"(?P<scheme>https?)://(?:(?P<userinfo>{_USERINFO})@)?(?P<host>{_HOST})(?::(?P<port>[0-9]{{1,5}}))?"
    rf"(?P<path>(?:/{_SEGMENT})*)/?",
    re.IGNORECASE,
)
_SCHEME_PORTS = {"http": 80, "https": 443}
_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")


def url_problem(url: str) -> str | None:
    """Return why url is not a plain server URL (see the module's form), or None when it is one."""
    text = str(url)
    if bad := next((c for c in text if not "!" <= c <= "~"), None):
        name = {" ": "a space", "\t": "a tab", "\n": "a line break", "\r": "a line break"}.get(bad)
        return f"it contains {name or repr(bad)}; write it in plain ASCII (a host as xn--…, other characters as %XX)"
    if "\\" in text:
        return "it contains a backslash; use / in URLs"
    if "?" in text or "#" in text:
        return "a server URL has no ?query or #fragment"
    match = _FORM.fullmatch(text)
    if match is None:
        return _form_problem(text)
    port = match["port"]
    if port is not None and not 0 < int(port) < 65536:
        return f"the port {port} is not between 1 and 65535"
    if any(segment in (".", "..") for segment in match["path"].split("/")):
        return "its path has a '.' or '..' segment"
    return _parsers_disagree(text)


def _form_problem(text: str) -> str:
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() not in _SCHEME_PORTS:
        return "it needs http:// or https:// and a host"
    authority, _, path = rest.partition("/")
    if authority.count("@") > 1:
        return "it has more than one '@' before the host; write an '@' inside a user name or password as %40"
    if "//" in f"/{path}":
        return "its path has an empty segment ('//')"
    host = authority.rpartition("@")[2]
    if not host or host.startswith(":"):
        return "it has no host"
    if "%" in host:
        return "its host contains '%'; write the host plainly"
    return "it has a character that does not belong in a host, port or path"


def _parsers_disagree(text: str) -> str | None:
    """Return a problem when urllib.parse, urllib3 and httpx read a different scheme, host or port."""
    from urllib3.util import parse_url  # qdrant-client's parser; urllib3 comes with it

    try:
        split, three, web = urlsplit(text), parse_url(text), httpx.URL(text)
        readings = {
            (split.scheme.lower(), (split.hostname or "").lower(), split.port or _SCHEME_PORTS[split.scheme.lower()]),
            ((three.scheme or "").lower(), (three.host or "").lower().strip("[]"),
             three.port or _SCHEME_PORTS[(three.scheme or "").lower()]),
            (web.scheme, web.host.lower(), web.port or _SCHEME_PORTS[web.scheme]),
        }
    except (ValueError, KeyError) as error:  # LocationParseError and httpx.InvalidURL are ValueErrors
        return f"it cannot be read ({str(error)[:80]})"
    return None if len(readings) == 1 else "URL parsers read different hosts or ports in it; write it plainly"


def endpoint(url: str, default_port: int | None = None) -> tuple[str, str, int, str]:
    """Return (scheme, host, port, path) where a request to a plain url goes, as httpx reads it.

    default_port: the port the client uses when the URL names none (qdrant-client: 6333), else the
    scheme's. The path is without trailing slashes. Raises ValueError for a URL that is not plain.
    """
    problem = url_problem(url)
    if problem:
        raise ValueError(problem)
    parsed, explicit = httpx.URL(url), _FORM.fullmatch(url)["port"]  # type: ignore[index]
    port = int(explicit) if explicit else default_port or _SCHEME_PORTS[parsed.scheme]
    return parsed.scheme, parsed.host.lower(), port, parsed.path.rstrip("/")


def display_url(url: str) -> str:
    """Return url without the user:password part a URL may carry (safe to show).

    For a URL that is not plain, everything up to its last '@' is hidden: a password may hold '/' or '#'.
    """
    text = str(url)
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    if url_problem(text) is None:
        rest = rest.partition("/")[0]
    if "@" not in rest:
        return text
    hidden = len(scheme) + len(sep) + len(rest.rpartition("@")[0])
    return f"{scheme}{sep}***{text[hidden:]}"


def redact_urls(text: str) -> str:
    """Return text with every URL in it shown by display_url (no user:password)."""
    return _IN_TEXT.sub(lambda match: display_url(match.group(0)), str(text))
