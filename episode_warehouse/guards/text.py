"""Text that comes from a source and ends up in Markdown or YAML we publish (a dataset card).

A ``robot_type`` of ``x](javascript:alert(1))`` or a task ``![t](https://tracker/pixel.png)``
interpolated raw into a card publishes a link, a tracking image or a fake heading under our
name. Every outside value enters Markdown through :func:`markdown_text` (one line, every
character that opens a Markdown or HTML construct backslash-escaped, as CommonMark allows),
:func:`markdown_code` or :func:`code_block` (fences longer than any backtick run inside); YAML
values are :func:`one_line` (a ``---`` line would end the header) written by ``yaml.safe_dump``,
which quotes.
Identifiers (``robot_type``) are checked where they enter with :func:`checked_identifier`, and
only public URLs are published (:func:`public_url`): a local folder is nobody's business.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from episode_warehouse.errors import CorruptInputError

# what opens emphasis, code, links, images, autolinks, HTML, entities, tables, headings, strikes
_ESCAPE = {ord(c): "\\" + c for c in "\\`*_[]<>!|&#~"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
LICENSE_ID = re.compile(r"[a-z0-9][a-z0-9.+-]{0,63}")  # the hub's license ids (cc-by-4.0)
PUBLIC_SCHEMES = ("https", "http", "gs", "hf")


def one_line(value: object, *, max_chars: int = 300) -> str:
    """``value`` as one line of text: control characters and line breaks become spaces, cut at
    ``max_chars`` (with an ellipsis). What a YAML header holds (a ``---`` line in a value would
    end the header for the hub's parser)."""
    text = _CONTROL.sub(" ", str(value)).strip()
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return text


def markdown_text(value: object, *, max_chars: int = 300) -> str:
    """``value`` as inline Markdown that renders as exactly its text (:func:`one_line`, then
    each character that opens a Markdown or HTML construct escaped)."""
    return one_line(value, max_chars=max_chars).translate(_ESCAPE)


def markdown_code(value: object, *, max_chars: int = 300, in_table: bool = False) -> str:
    """``value`` as an inline code span (verbatim: its fence is longer than any backtick run
    in it). ``in_table``: a GFM table splits cells at ``|`` even inside code, so it is escaped
    (the table renders it as ``|``)."""
    text = one_line(value, max_chars=max_chars)
    if in_table:
        text = text.replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code_block(text: str, language: str = "") -> list[str]:
    """Lines of a fenced code block holding ``text`` verbatim (the fence is longer than any
    run of backticks in it, so nothing in it can close the block)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{language}", text.strip("\n"), fence]


def checked_identifier(value: object, *, what: str, subject: str, fix: str) -> str:
    """``value`` when it is an identifier (a letter or digit, then up to 63 letters, digits or
    ``_.+-``), as robot types and similar names are.

    Raises:
        CorruptInputError: naming ``what`` and the value.
    """
    if not isinstance(value, str) or IDENTIFIER.fullmatch(value) is None:
        raise CorruptInputError(
            f"{what} {value!r} is not an identifier (a letter or digit, then up to 63 letters, "
            "digits or _.+-)",
            subject=subject,
            fix=fix,
        )
    return value


def public_url(url: object) -> str | None:
    """``url`` when it is a public URL (https, http, gs or hf, with a host and no credentials);
    None for anything else, such as a local folder."""
    if not isinstance(url, str) or _CONTROL.search(url):
        return None
    parts = urlsplit(url)
    if parts.scheme not in PUBLIC_SCHEMES or not parts.netloc or "@" in parts.netloc:
        return None
    return url
