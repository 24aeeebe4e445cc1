"""The Board's 404 for a thing that is unknown or not the human's.

A page's lookup raises ``NotFound`` naming what was asked for; the project's 404 handler
(``switchboard.views.page_not_found``) draws it inside the Board, with the rail and a way back
to the section's list. The lookups decide the scope: an unknown slug and another human's say
the same words, so the answer tells an outsider nothing the unknown one would not.
"""

from __future__ import annotations

from django.http import Http404

# Why a thing the human asked for may not be found, by whom it belongs to.
YOURS = "it does not exist, or it is not yours or one of your teams'"
ON_YOUR_ENDPOINTS = "it does not exist, or it is not on one of your endpoints"
A_MEMBER = "it does not exist, or you are not one of its members"


class NotFound(Http404):
    """``what`` (``"Endpoint"``) ``name`` (as asked for) was not found: ``why``; ``section``
    is the rail's item it belongs under."""

    def __init__(self, what: str, name: object, *, section: str, why: str = YOURS) -> None:
        self.what = what
        self.name = str(name)
        self.section = section
        self.why = why
        super().__init__(f"{what} {name} was not found: {why}")
