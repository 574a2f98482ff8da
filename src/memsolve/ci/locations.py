"""Locations as CI tools want them: files relative to the working directory (the repository root
in CI) when they lie under it, normalised, with forward slashes. Shared by every report format and
the findings table, so each names a finding's place the same way."""

from __future__ import annotations

import os

from ..errors import Location


def uri(file: str) -> str:
    """``file`` relative to the working directory when under it, normalised, ``/``-separated."""
    path = os.path.normpath(file)
    if os.path.isabs(path):
        relative = os.path.relpath(path)
        if not relative.startswith(os.pardir):
            path = relative
    return path.replace(os.sep, "/")


def location_text(location: Location | None) -> str:
    """``file:line:column`` with the file as :func:`uri` writes it ("" when there is no file)."""
    if location is None or not location.file:
        return ""
    return Location(uri(location.file), location.line, location.column).render()
