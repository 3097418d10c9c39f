"""``hf://`` URLs: which kind of repository, which repository, which revision.

Everything here comes from settings or listings, so it is checked where it enters: a repo id is
``OWNER/NAME`` of the hub's characters; a revision is a branch, a tag or a commit sha of the
characters git allows in a ref name (no ``..``, no leading ``-`` or ``/``, at most 256).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from episode_warehouse.errors import ConfigError

SCHEME = "hf://"
KINDS = {"datasets": "dataset", "models": "model", "spaces": "space"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_REVISION = re.compile(r"^[A-Za-z0-9._/+-]{1,256}$")


@dataclass(frozen=True)
class HubUrl:
    repo_type: str  # "dataset", ...
    repo_id: str | None = None  # OWNER/NAME, or None: every repository of that kind
    revision: str | None = None

    @property
    def url(self) -> str:
        kind = next(k for k, v in KINDS.items() if v == self.repo_type)
        out = f"{SCHEME}{kind}"
        if self.repo_id:
            out += f"/{self.repo_id}"
        if self.revision:
            out += f"@{self.revision}"
        return out


def is_repo_id(text: str) -> bool:
    """``OWNER/NAME``, each part of the hub's characters (no ``..``, no other slashes)."""
    text = text or ""
    owner, _, name = text.partition("/")
    return bool(_NAME.match(owner) and _NAME.match(name)) and ".." not in text


def check_repo_id(repo_id: str, *, subject: str) -> str:
    """:func:`is_repo_id`, or a ConfigError naming ``subject``."""
    if not is_repo_id(repo_id):
        raise ConfigError(
            f"{repo_id!r} is not a hub repo id",
            subject=subject,
            fix="write it as OWNER/NAME, e.g. lerobot/pusht",
        )
    return repo_id


def check_revision(revision: str, *, subject: str) -> str:
    """A branch, tag or commit sha, as a ref name git would accept."""
    if (
        not _REVISION.match(revision)
        or ".." in revision
        or revision.startswith(("-", "/"))
        or revision.endswith(("/", ".lock"))
        or "//" in revision
    ):
        raise ConfigError(
            f"{revision!r} is not a revision (a branch, a tag or a commit sha)",
            subject=subject,
            fix="name a branch (main), a tag (v3.0) or a 40-character commit sha",
        )
    return revision


def parse_hub_url(url: str, *, setting: str) -> HubUrl:
    """``hf://datasets``, ``hf://datasets/OWNER/NAME`` or ``hf://datasets/OWNER/NAME@REV``.

    Raises:
        ConfigError: another form (named with ``setting`` and the forms accepted).
    """
    fix = "write hf://datasets, hf://datasets/OWNER/NAME or hf://datasets/OWNER/NAME@REVISION"
    if not url.startswith(SCHEME):
        raise ConfigError("not an hf:// URL", subject=f"{setting}={url!r}", fix=fix)
    body, _, revision = url[len(SCHEME) :].rstrip("/").partition("@")
    kind, _, repo = body.partition("/")
    if kind not in KINDS:
        raise ConfigError(
            f"unknown repository kind {kind!r}", subject=f"{setting}={url!r}", fix=fix
        )
    repo_id = check_repo_id(repo, subject=f"{setting}={url!r}") if repo else None
    if revision and not repo_id:
        raise ConfigError("a revision without a repo", subject=f"{setting}={url!r}", fix=fix)
    rev = check_revision(revision, subject=f"{setting}={url!r}") if revision else None
    return HubUrl(KINDS[kind], repo_id, rev)
