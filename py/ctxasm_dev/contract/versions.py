"""Versions derived from the code they version: "<prefix>-<12 hex>", the sha256 of the normalised text of the
version's files (contract/selection.toml) with the version literal itself masked.

Normalised: comment lines, /* */ blocks (SQL), blank lines and trailing white space do not count, so a comment
edit keeps the version and every change of code gives a new one.
"""

from __future__ import annotations

import hashlib
import re

from ctxasm_dev.contract.catalogue import SELECTION_FILE, CatalogueError, VersionRule

_SQL_BLOCK = re.compile(r"/\*.*?\*/", re.DOTALL)


def literal_pattern(prefix: str) -> re.Pattern[str]:
    """A version literal in SQL or Python quotes: 'selection-0123456789ab'."""
    return re.compile(rf"""(['"]){re.escape(prefix)}-[0-9a-f]{{12}}\1""")


def normalised(path: str, text: str) -> str:
    comment = "#" if path.endswith(".py") else "--"
    if not path.endswith(".py"):
        text = _SQL_BLOCK.sub("", text)
    lines = (line.rstrip() for line in text.splitlines())
    return "\n".join(line for line in lines if line and not line.lstrip().startswith(comment))


def digest(rule: VersionRule, texts: dict[str, str]) -> str:
    """The version of `rule` over {path: text} of its files, in the rule's order."""
    pattern = literal_pattern(rule.prefix)
    sha = hashlib.sha256()
    for path, text in texts.items():
        sha.update(normalised(path, pattern.sub(rf"\1{rule.prefix}-VERSION\1", text)).encode("utf-8"))
        sha.update(b"\0")
    return f"{rule.prefix}-{sha.hexdigest()[:12]}"


def write_version(rule: VersionRule, host_path: str, host_text: str, version: str) -> str:
    pattern = literal_pattern(rule.prefix)
    found = pattern.findall(host_text)
    if len(found) != 1:
        raise CatalogueError(f"{SELECTION_FILE}: version.{rule.key}: {host_path} holds {len(found)} literals "
                             f"'{rule.prefix}-<12 hex>', expected exactly one")
    return pattern.sub(lambda m: f"{m.group(1)}{version}{m.group(1)}", host_text)
