"""Moving something into a team from its Board page, asked first: the one flow an endpoint's, a
source's and an alert channel's "Move…" share.

A move cannot be taken back (nothing moves back to a person: docs/decisions/0034-teams.md), so
a GET, or a POST without ``confirm=yes``, is refused as the move would be or answered with the
page's question; only the confirmed POST moves. Each page brings what differs: its writer, its
question and what it says once moved.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpResponse

from switchboard.lib.guards import BoardRequest, confirmed
from switchboard.models import Owned, Team
from switchboard.teams import TeamRefused, check_move, named_team


def move_asked_first(
    request: BoardRequest,
    owned: Owned,
    *,
    move: Callable[[Team], object],
    question: Callable[[Team], HttpResponse],
    moved: Callable[[Team], str],
    back: HttpResponse,
) -> HttpResponse:
    """Move ``owned`` into the team the request names (``team``, in the query or the form) with
    ``move`` once confirmed, saying ``moved``; before that, ``question``. A refusal
    (``TeamRefused``: no such team, not its admin, not the manager of ``owned``) is said by name
    on ``back``, whichever the step, and nothing changes."""
    asked = request.POST if request.method == "POST" else request.GET
    try:
        team = named_team(str(asked.get("team", "")), request.user)
        if request.method == "POST" and confirmed(request):
            move(team)
        else:
            check_move(owned, team, by=request.user)
            return question(team)
    except TeamRefused as exc:
        messages.error(request, f"Not moved: {exc.message}.")
    else:
        messages.success(request, moved(team))
    return back
