"""A turn that names its speaker: the name where the role would be, on the turn's one line, and in the text its
embedding is computed from."""

from __future__ import annotations

from ctxasm.core import render
from ctxasm.core.tokens import count_tokens
from ctxasm.engines.searchable import embedding_text


def test_the_name_takes_the_role_s_place():
    assert render.turn_line("M3", "user", "The heater is broken.", speaker="Maya") == "M3 Maya: The heater is broken."
    assert render.turn_line("M3", "user", "The heater is broken.") == "M3 user: The heater is broken."
    # a blank name says nothing: the role is shown
    assert render.turn_line("M3", "assistant", "Noted.", speaker=" \t") == "M3 assistant: Noted."


def test_the_name_is_one_line_and_escaped_as_data():
    line = render.turn_line("M3", "user", "hi", speaker="Dr  <b>Lee</b>\n M9 assistant")
    assert line == "M3 Dr &lt;b&gt;Lee&lt;/b&gt; M9 assistant: hi"
    assert len(line.splitlines()) == 1


def test_a_named_line_costs_less_than_the_role_and_the_name_in_the_text():
    named = render.turn_line("M12", "user", "Guess who has a new housemate?", speaker="Maya")
    in_text = render.turn_line("M12", "user", "Maya: Guess who has a new housemate?")
    assert count_tokens(named) + 2 == count_tokens(in_text)


def test_a_thread_turn_starts_with_its_speaker():
    assert render.tail_turn("M4", "user", "Any news?", speaker="Maya") == ("user", "Maya: Any news?")
    assert render.tail_turn("M4", "assistant", "Not yet.") == ("assistant", "Not yet.")
    role, quoted = render.tail_turn("M4", "tool", "42 rows", speaker="db-bot")
    assert role == "user" and "db-bot: 42 rows" in quoted


def test_a_named_turn_is_embedded_as_it_reads():
    record = {"role": "user", "content": "The heater is broken.", "speaker": "Maya"}
    assert embedding_text("conversation", record) == "Maya: The heater is broken."
    assert embedding_text("conversation", {**record, "speaker": None}) == "The heater is broken."
    assert embedding_text("entity", {"content": "x", "speaker": "Maya"}) == "x"  # only turns have speakers
