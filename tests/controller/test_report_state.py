"""The per-resource state of the background reports (celmut/controller/report_state.py): what it answers
is what a dict of dicts would, however it stores it."""

from __future__ import annotations

from celmut.controller.report_state import Successors, Versions


def test_versions_answer_per_name_whether_they_agree_or_not() -> None:
    versions = Versions()
    versions.set("uid-1", "add-team", "10")
    versions.set("uid-1", "security", "10")  # the same state for both: one tuple
    assert (versions.get("uid-1", "add-team"), versions.get("uid-1", "security")) == ("10", "10")
    versions.set("uid-1", "add-team", "11")  # now they differ
    assert (versions.get("uid-1", "add-team"), versions.get("uid-1", "security")) == ("11", "10")
    versions.set("uid-1", "security", "11")  # agree again
    assert (versions.get("uid-1", "add-team"), versions.get("uid-1", "security")) == ("11", "11")
    assert versions.get("uid-1", "other") is None and versions.get("uid-2", "add-team") is None
    versions.pop("uid-1")
    assert versions.get("uid-1", "add-team") is None


def test_successors_keep_the_last_changes_of_each_resource() -> None:
    successors = Successors(limit=3)
    for before, after in (("", "1"), ("1", "2"), ("2", "3"), ("3", "4")):
        successors.add("uid-1", before, after)
    assert [successors.get("uid-1", v) for v in ("", "1", "2", "3")] == [None, "2", "3", "4"]  # "" forgotten
    successors.add("uid-1", "2", "9")  # the same version replaced again: the latest answer
    assert successors.get("uid-1", "2") == "9" and successors.get("uid-2", "1") is None
