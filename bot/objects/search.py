"""A search of the past as every door asks for it: the words, and the time and camera it is limited to."""

from __future__ import annotations

from pydantic import AliasChoices, Field

from bot.objects.base import Spec
from bot.objects.text import Name, Text60, Text300

MAX_MOMENTS = 50  # an answer's table: Slack's table block takes 100 rows; a person reads far fewer


class EventSearchSpec(Spec):
    """What `search_events`, `/vision search WORDS` and `GET /api/events/search?q=` ask for."""

    query: Text300 = Field(min_length=1, validation_alias=AliasChoices("query", "q", "words"),
                           description="What to look for, in words: 'a white van', 'someone walking left', "
                           "'a delivery' (matched by words and by meaning)")
    since: Text60 | None = Field(None, description="From when: '2h', 'HH:MM', 'yesterday 18:00', an ISO time; "
                                 "default: everything the event log keeps")
    until: Text60 | None = Field(None, description="Until when, in the same forms; default: now")
    camera: Name | None = Field(None, description="Only this camera (pipeline name)")
    limit: int = Field(10, ge=1, le=MAX_MOMENTS, description="How many moments at most")
